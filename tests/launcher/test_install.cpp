// The tools as a cluster gets them: `cmake --install` into a scratch prefix and the .deb that
// `cpack -G DEB` builds, unpacked into a scratch root. The installed tools run from another
// folder, say their version, train a tiny job under mpirun, and name neither the source nor the
// build tree anywhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/version.h"
#include "tests/support/run_command.h"

namespace {

using tl::testing::freshDir;
using tl::testing::runCommand;
using tl::testing::slurp;

const std::vector<std::string> kTools = {"tl-launch", "tl-ctl",    "tl-data", "tl-coordinator", "tl-submit",
                                         "tl-profile", "tl-run", "tl-sim", "tl-sched", "tl-predict"};

// `command` run by sh in `folder` (runCommand puts `timeout` in front, which runs no builtins).
std::string inFolder(const std::string& folder, const std::string& command) {
  return "sh -c 'cd " + folder + " && " + command + "'";
}

std::string expectedVersionLine(const std::string& tool) {
  return tl::versionLine(tool) + "\n";
}

// Files under `root` that contain `text` (grep -rlF), one a line; empty when none does.
std::string filesNaming(const std::string& root, const std::string& text, const std::string& scratch) {
  return runCommand("grep -rlF '" + text + "' " + root, 60, scratch).out;
}

// Every tool says its version from /, without mpirun; no installed file names the trees.
void expectSelfContained(const std::string& root, const std::string& bin, const std::string& scratch) {
  for (const std::string& tool : kTools) {
    const auto r = runCommand(inFolder("/", bin + "/" + tool + " --version"), 30, scratch);
    EXPECT_EQ(r.exitCode, 0) << tool << ": " << r.err;
    EXPECT_EQ(r.out, expectedVersionLine(tool));
  }
  EXPECT_EQ(filesNaming(root, TL_BUILD_DIR, scratch), "") << "installed files name the build tree";
  EXPECT_EQ(filesNaming(root, TL_SOURCE_DIR, scratch), "") << "installed files name the source tree";
  const auto rpath = runCommand("readelf -d " + bin + "/tl-launch", 30, scratch);
  ASSERT_EQ(rpath.exitCode, 0) << rpath.err;
  EXPECT_EQ(rpath.out.find(TL_BUILD_DIR), std::string::npos) << rpath.out;
}

class Install : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_ = freshDir("install_prefix");
    const auto r = runCommand(std::string(TL_CMAKE) + " --install " + TL_BUILD_DIR + " --prefix " + prefix_,
                              120, freshDir("install_log"));
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  }
  static std::string prefix_;
};
std::string Install::prefix_;

TEST_F(Install, ToolsAndDocsLandInThePrefix) {
  for (const std::string& tool : kTools)
    EXPECT_TRUE(std::filesystem::is_regular_file(prefix_ + "/bin/" + tool)) << tool;
  for (const char* doc : {"README.md", "docs/README.md", "docs/guide/running-a-job.md",
                          "docs/design/layers.md", "docs/design/resource-usage.md", "tl-submit.md",
                          "tl-profile.md"})
    EXPECT_TRUE(std::filesystem::is_regular_file(prefix_ + "/share/doc/tl/" + doc)) << doc;
}

TEST_F(Install, InstalledToolsSayTheirVersionAndNameNoTree) {
  expectSelfContained(prefix_, prefix_ + "/bin", freshDir("install_check"));
}

TEST_F(Install, SubmitAndProfileRunTheTlLaunchNextToThem) {
  const std::string scratch = freshDir("install_defaults");
  for (const char* tool : {"tl-submit", "tl-profile"}) {
    const auto r = runCommand(inFolder("/", prefix_ + "/bin/" + tool + " --help"), 30, scratch);
    ASSERT_EQ(r.exitCode, 0) << tool << ": " << r.err;
    EXPECT_NE(r.out.find(prefix_ + "/bin/tl-launch"), std::string::npos) << tool << ":\n" << r.out;
  }
}

TEST_F(Install, TheInstalledTlLaunchTrainsFromAnotherFolder) {
  const std::string work = freshDir("install_job");
  const auto r = runCommand(inFolder(work, tl::testing::mpirunPrefix(2) + prefix_ +
                                          "/bin/tl-launch --model mlp --dataset fashion-mnist"
                                          " --batch 16 --steps 3 --output-dir out"),
                            120, work);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(slurp(work + "/out/summary.json"));
  EXPECT_EQ(summary.at("steps"), 3);
  EXPECT_EQ(summary.at("tl_version"), tl::tlVersion());
  EXPECT_EQ(summary.at("tl_git_commit"), tl::tlGitCommit());
}

TEST_F(Install, TheInstalledTlPredictPredictsAJobFromAnotherFolder) {
  const std::string work = freshDir("install_predict");
  const auto r = runCommand(inFolder(work, prefix_ + "/bin/tl-predict --model cnn --batch 8 --processes 2 --json"),
                            120, work);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const auto prediction = nlohmann::json::parse(r.out);
  // It traced the model, and with two processes the gradients cross the network.
  EXPECT_GT(prediction.at("trace").at("parameters").get<int64_t>(), 0) << r.out;
  EXPECT_GT(prediction.at("analytic").at("tx_burst_mb_per_s").get<double>(), 0) << r.out;
}

TEST(InstallDeb, ThePackageUnpacksToWorkingToolsAndNamesItsDependencies) {
  if (std::string(TL_CPACK).empty() || std::string(TL_DPKG_DEB).empty())
    GTEST_SKIP() << "cpack or dpkg-deb not found";
  const std::string out = freshDir("install_deb");
  const auto pack = runCommand(inFolder(TL_BUILD_DIR, std::string(TL_CPACK) + " -G DEB -B " + out),
                               120, freshDir("install_deb_log"));
  ASSERT_EQ(pack.exitCode, 0) << pack.out << pack.err;
  const std::string deb = out + "/tl_" + tl::tlVersion() + "_amd64.deb";
  ASSERT_TRUE(std::filesystem::is_regular_file(deb)) << pack.out;

  const std::string scratch = freshDir("install_deb_check");
  const auto fields = runCommand(std::string(TL_DPKG_DEB) + " -f " + deb + " Package Version Maintainer Depends", 30, scratch);
  ASSERT_EQ(fields.exitCode, 0) << fields.err;
  for (const std::string& want : {std::string("Package: tl"), "Version: " + std::string(tl::tlVersion()),
                                  std::string("Maintainer: tl developers"), std::string("openmpi-bin"),
                                  std::string("libtorch"), std::string("libopenmpi")})
    EXPECT_NE(fields.out.find(want), std::string::npos) << want << " in:\n" << fields.out;

  const std::string root = freshDir("install_deb_root");
  const auto unpack = runCommand(std::string(TL_DPKG_DEB) + " -x " + deb + " " + root, 60, scratch);
  ASSERT_EQ(unpack.exitCode, 0) << unpack.err;
  expectSelfContained(root, root + "/usr/bin", scratch);
  EXPECT_TRUE(std::filesystem::is_regular_file(root + "/usr/share/doc/tl/README.md"));
}

}  // namespace
