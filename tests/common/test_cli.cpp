// tl_cli: the command-line conventions shared by tl-submit, tl-profile, tl-coordinator, tl-data.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/check.h"
#include "common/version.h"
#include "common/cli/cli.h"
#include "common/cli/host_list.h"

namespace {

using tl::cli::parse;

std::string inputErrorOf(CLI::App& app, const std::vector<std::string>& args) {
  try {
    parse(app, args);
  } catch (const tl::InputError& e) {
    return e.what();
  }
  return "no error";
}

struct Tool {
  std::unique_ptr<CLI::App> app = tl::cli::makeApp("tl-demo", "A demo tool.");
  std::string table, mpiArgs;
  bool background = false;
  int ports = 32;
  double share = 0.5;
  Tool() {
    app->add_option("table,--table", table, "the table");
    app->add_flag("--background", background, "all at once");
    app->add_option("--mpi-args", mpiArgs, "more mpirun arguments");
    tl::cli::addInt(*app, "--ports", &ports, "ports per job", 1, 100);
    tl::cli::addDouble(*app, "--share", &share, "a share", 0, 1);
  }
};

TEST(Cli, FlagsBeforeAndAfterThePositional) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--background", "jobs.csv", "--ports", "8"},
           {"jobs.csv", "--background", "--ports=8"},
           {"--ports", "8", "--table", "jobs.csv", "--background"}}) {
    Tool t;
    ASSERT_TRUE(parse(*t.app, args));
    EXPECT_EQ(t.table, "jobs.csv");
    EXPECT_TRUE(t.background);
    EXPECT_EQ(t.ports, 8);
  }
}

TEST(Cli, AValueMayLookLikeAFlag) {
  Tool t;
  ASSERT_TRUE(parse(*t.app, {"--mpi-args", "--mca btl tcp,self", "--share", "-0", "x.csv"}));
  EXPECT_EQ(t.mpiArgs, "--mca btl tcp,self");
  EXPECT_EQ(t.table, "x.csv");
  EXPECT_EQ(tl::cli::splitBlanks(t.mpiArgs), (std::vector<std::string>{"--mca", "btl", "tcp,self"}));
}

TEST(Cli, BadInputIsOneMessageNamingTheFlag) {
  Tool a, b, c, d, e, f, g;
  EXPECT_EQ(inputErrorOf(*a.app, {"--colour", "red"}),
            "unknown flag '--colour' (see tl-demo --help)");
  EXPECT_EQ(inputErrorOf(*b.app, {"--colour=red"}), "unknown flag '--colour' (see tl-demo --help)");
  EXPECT_EQ(inputErrorOf(*c.app, {"a.csv", "b.csv"}), "unexpected argument 'b.csv' (see tl-demo --help)");
  EXPECT_EQ(inputErrorOf(*d.app, {"--ports", "0"}), "--ports: must be between 1 and 100, got 0");
  EXPECT_EQ(inputErrorOf(*e.app, {"--ports", "3x"}), "--ports: expected an integer, got '3x'");
  EXPECT_EQ(inputErrorOf(*f.app, {"--background", "--background"}), "--background is given twice");
  EXPECT_EQ(inputErrorOf(*g.app, {"a.csv", "--ports"}), "--ports: missing value");
}

// `--flag=` gives the flag an empty value, which the flag judges; CLI11 alone would take the
// next argument as the value (`--ports= --share 1` leaving "1" unexpected).
TEST(Cli, AnEmptyValueAfterEqualsIsTheFlagsValue) {
  Tool a, b, c, d;
  EXPECT_EQ(inputErrorOf(*a.app, {"--ports=", "--share", "1"}),
            "--ports: expected an integer, got ''");
  EXPECT_EQ(inputErrorOf(*b.app, {"x.csv", "--share=", "--ports", "3"}),
            "--share: expected a number, got ''");
  ASSERT_TRUE(parse(*c.app, {"--mpi-args=", "--ports", "3", "x.csv"}));
  EXPECT_EQ(c.mpiArgs, "");
  EXPECT_EQ(c.ports, 3);
  EXPECT_EQ(c.table, "x.csv");
  ASSERT_TRUE(parse(*d.app, {"--table=", "--background"}));
  EXPECT_EQ(d.table, "");
  EXPECT_TRUE(d.background);
}

TEST(Cli, HelpIsPrintedAndParseSaysStop) {
  Tool t;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(parse(*t.app, {"--ports", "4", "--help"}));
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("A demo tool."), std::string::npos) << help;
  // CLI11 2.3 (Debian 12) shows a default as "INT=32", 2.4 (Debian 13) as "INT [32]".
  EXPECT_TRUE(help.find("--ports INT=32") != std::string::npos || help.find("--ports INT [32]") != std::string::npos)
      << "default shown: " << help;
}

TEST(Cli, VersionIsPrintedAndParseSaysStop) {
  Tool t;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(parse(*t.app, {"--version"}));
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, std::string("tl-demo ") + tl::tlVersion() + " (git " + tl::tlGitCommit() + ")\n");
  EXPECT_STRNE(tl::tlVersion(), "");
}

TEST(Cli, SubcommandsAndUnknownCommands) {
  auto app = tl::cli::makeApp("tl-demo", "");
  std::string out;
  CLI::App* synth = app->add_subcommand("synth");
  synth->add_option("--out", out);
  app->add_subcommand("info");
  ASSERT_TRUE(parse(*app, {"synth", "--out", "d"}));
  EXPECT_TRUE(synth->parsed());
  EXPECT_EQ(out, "d");
  EXPECT_EQ(inputErrorOf(*app, {"shuffle"}),
            "unknown command 'shuffle' (commands: synth, info; see tl-demo --help)");
  EXPECT_EQ(inputErrorOf(*app, {"synth", "--size", "3"}),
            "unknown flag '--size' (see tl-demo synth --help)");
}

TEST(Cli, RunPrintsTheProgramOnceAndMapsExitStatuses) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(tl::cli::run("tl-demo", [] { return 0; }), tl::cli::kExitOk);
  EXPECT_EQ(tl::cli::run("tl-demo", []() -> int { tl::inputError("tl-demo: --x: bad"); }),
            tl::cli::kExitBadInput);
  EXPECT_EQ(tl::cli::run("tl-demo", []() -> int { throw std::runtime_error("disk on fire"); }),
            tl::cli::kExitFailure);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "tl-demo: error: --x: bad\ntl-demo: error: disk on fire\n");
}

TEST(Cli, IntLists) {
  EXPECT_EQ(tl::cli::parseIntList("0,1,2,4", "--sweep"), (std::vector<int64_t>{0, 1, 2, 4}));
  for (const std::string bad : {"", "1,", "1,,2", "1,x"}) {
    EXPECT_THROW(tl::cli::parseIntList(bad, "--sweep"), tl::InputError) << bad;
  }
  try {
    tl::cli::parseIntList("1,x", "--sweep");
  } catch (const tl::InputError& e) {
    EXPECT_STREQ(e.what(), "--sweep: expected an integer, got 'x'");
  }
}

// One host list for tl-run --hosts (HOST alone is one slot) and tl-ctl --hosts (HOST:N always).
TEST(Cli, HostLists) {
  using tl::HostSlots;
  using tl::cli::parseHostList;
  EXPECT_EQ(parseHostList("a:2,b,c.example-1:4", "--hosts"),
            (std::vector<HostSlots>{{"a", 2}, {"b", 1}, {"c.example-1", 4}}));
  EXPECT_EQ(tl::formatHostList({{"a", 2}, {"b", 1}}), "a:2,b:1");
  const auto refused = [](const std::string& text, tl::cli::HostListRules rules) -> std::string {
    try {
      parseHostList(text, "--hosts", rules);
    } catch (const tl::InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  const tl::cli::HostListRules counted{true, 8};
  EXPECT_EQ(refused("a:2,b", counted), "--hosts: expected HOST:N, got 'b'");
  EXPECT_EQ(refused("a,,b", {}), "--hosts: expected HOST[:N], got ''");
  EXPECT_EQ(refused("a:1,", counted), "--hosts: expected HOST:N[,HOST:N...], got 'a:1,'");
  EXPECT_EQ(refused("bad host:1", {}),
            "--hosts: 'bad host' is not a host name (1-255 characters of A-Z a-z 0-9 . - _)");
  EXPECT_EQ(refused(":3", {}), "--hosts: '' is not a host name (1-255 characters of A-Z a-z 0-9 . - _)");
  EXPECT_EQ(refused("a:0", {}), "--hosts: a:0, the count must be between 1 and 1048576");
  EXPECT_EQ(refused("a:9", counted), "--hosts: a:9, the count must be between 1 and 8");
  EXPECT_NE(refused("a:x", {}).find("--hosts a"), std::string::npos);
}

}  // namespace
