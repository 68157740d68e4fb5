// tl-ctl as a real process against a control server in this test process (with a stand-in
// training loop): what it prints and its exit status for done (0), refused (3), bad input (2)
// and a job it cannot reach or that fails (1), and one resend after a Moved answer.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <future>

#include "common/files.h"
#include "control/control_key.h"
#include "tests/control/control_test_util.h"
#include "tests/support/run_command.h"

namespace tl::control {
namespace {

using test_util::Responder;
using test_util::waitFor;
using ::tl::testing::CommandResult;

const std::string kCtl = TL_CTL_BIN;
const char* kStatus =
    R"({"step":1200,"epoch":3,"processes":2,"hosts":["nodeA","nodeB"],"placement":[3,1],)"
    R"("images_per_second":1534.25,"last_rescale":null})";

Reply answer(const Request& r) {
  if (r.command == Command::Rescale && r.processes > 8)
    return {Outcome::Refused, "only 8 devices are free", ""};
  if (r.command == Command::Checkpoint) return {Outcome::Failed, "disk full", ""};
  return {Outcome::Done, describe(r) + ": done", ""};
}

class ControlCtl : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.jobDir = ::tl::testing::freshDir("control_ctl_job");
    o.status = [] { return std::string(kStatus); };
    jobDir_ = o.jobDir;
    server_ = std::make_unique<ControlServer>(o);
    loop_ = std::make_unique<Responder>(*server_, answer);
  }
  void TearDown() override {
    loop_.reset();
    server_.reset();
  }
  CommandResult ctl(const std::string& args) {
    return ::tl::testing::runCommand(kCtl + " " + args, 30,
                                     ::tl::testing::freshDir("control_ctl_scratch"));
  }

  std::string jobDir_;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<Responder> loop_;
};

TEST_F(ControlCtl, StatusIsReadableAndRawWithJson) {
  auto r = ctl("status " + jobDir_);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("step               1200\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hosts              nodeA,nodeB\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("images per second  1534.2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last rescale       -\n"), std::string::npos) << r.out;
  r = ctl("status " + jobDir_ + " --json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kStatus) + "\n");
}

TEST_F(ControlCtl, CommandsPrintWhatHappened) {
  auto r = ctl("rescale " + jobDir_ + " --processes 3 --placement 2,1,1 --hosts nodeB:1,nodeC:2");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "rescale --processes 3 --placement 2,1,1 --hosts nodeB:1,nodeC:2: done\n");
  r = ctl("rescale " + jobDir_ + " --remove-ranks 2,3");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = ctl("placement " + jobDir_ + " 3,1");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "placement 3,1: done\n");
  r = ctl("stop " + jobDir_ + " --checkpoint");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  const std::string address = server_->address();
  r = ctl("placement --address " + address + " --key-file " + keyPath(jobDir_) + " 2,2");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(loop_->seen(), (std::vector<std::string>{
                               "rescale --processes 3 --placement 2,1,1 --hosts nodeB:1,nodeC:2",
                               "rescale --remove-ranks 2,3", "placement 3,1", "stop --checkpoint",
                               "placement 2,2"}));
}

TEST_F(ControlCtl, RefusedIsThreeAndFailedIsOne) {
  auto r = ctl("rescale " + jobDir_ + " --processes 9");
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_EQ(r.err, "tl-ctl: refused: only 8 devices are free\n");
  r = ctl("checkpoint " + jobDir_);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "tl-ctl: failed: disk full\n");
}

TEST_F(ControlCtl, BadInputIsTwoAndSendsNothing) {
  const std::pair<std::string, std::string> cases[] = {
      {"rescale " + jobDir_ + " --processes 0", "--processes: must be between 1"},
      {"rescale " + jobDir_, "needs --processes or --remove-ranks"},
      {"rescale " + jobDir_ + " --processes 2 --placement 2,0", "--placement: 0 is out of range"},
      {"rescale " + jobDir_ + " --processes 2 --placement 1,1,1", "3 entries for 2 processes"},
      {"rescale " + jobDir_ + " --processes 2 --hosts 'bad host:1'", "is not a host name"},
      {"rescale " + jobDir_ + " --processes 2 --hosts nodeB", "expected HOST:N"},
      {"rescale " + jobDir_ + " --remove-ranks 1,1", "named twice"},
      {"placement " + jobDir_, "placement needs the ESTs per process"},
      {"status", "which job?"},
      {"status /nonexistent/job", "does not exist"},
      {"status " + jobDir_ + " extra", "unexpected argument 'extra'"},
      {"frobnicate " + jobDir_, "unknown command"},
      {"status --address 127.0.0.1:1", "--address needs --key-file"},
      {"status --address nohost --key-file " + keyPath(jobDir_), "expected HOST:PORT"},
  };
  for (const auto& [args, words] : cases) {
    auto r = ctl(args);
    EXPECT_EQ(r.exitCode, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(::tl::testing::countOccurrences(r.err, "\n"), 1) << r.err;
  }
  EXPECT_TRUE(loop_->seen().empty());
}

TEST_F(ControlCtl, KeyProblemsAreTwo) {
  const std::string dir = ::tl::testing::freshDir("control_ctl_keys");
  const std::string wrongKey = dir + "/wrong.key";
  writeFileAtomic(wrongKey, keyFileText(Key(kKeyBytes, 9)));
  ::chmod(wrongKey.c_str(), 0600);
  auto r = ctl("status --address " + server_->address() + " --key-file " + wrongKey);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("rejected the request: not authenticated"), std::string::npos) << r.err;
  ::chmod(wrongKey.c_str(), 0644);
  r = ctl("status --address " + server_->address() + " --key-file " + wrongKey);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("mode 0644"), std::string::npos) << r.err;
  r = ctl("status " + dir);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("no job is serving control in"), std::string::npos) << r.err;
}

TEST_F(ControlCtl, UnreachableIsOne) {
  const int port = server_->port();
  loop_.reset();
  server_.reset();
  auto r =
      ctl("status --address 127.0.0.1:" + std::to_string(port) + " --key-file " + keyPath(jobDir_));
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("cannot reach the job at 127.0.0.1:"), std::string::npos) << r.err;
  // A job folder whose job is gone (control.json left by a killed job).
  writeFileAtomic(addressPath(jobDir_),
                  R"({"host":"127.0.0.1","port":)" + std::to_string(port) + R"(,"pid":1})");
  r = ctl("status " + jobDir_);
  EXPECT_EQ(r.exitCode, 1) << r.err;
}

TEST_F(ControlCtl, NoAnswerInTimeIsOne) {
  loop_.reset();  // nobody takes the request
  auto r = ctl("checkpoint " + jobDir_ + " --timeout 0.3");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("it may still carry the request out"), std::string::npos) << r.err;
}

TEST_F(ControlCtl, MovedIsSentAgainOnce) {
  loop_.reset();
  auto running =
      std::async(std::launch::async, [&] { return ctl("rescale " + jobDir_ + " --processes 2"); });
  ASSERT_TRUE(waitFor([&] { return server_->queued() == 1; }, 10));
  // A new lead process takes over the job folder (same key, new control.json), then the old
  // one stops and answers Moved.
  ServerOptions o;
  o.jobDir = jobDir_;
  auto next = std::make_unique<ControlServer>(o);
  Responder nextLoop(*next, answer);
  server_.reset();
  auto r = running.get();
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "rescale --processes 2: done\n");
  EXPECT_NE(r.err.find("the job's control moved; send again"), std::string::npos) << r.err;
  EXPECT_EQ(nextLoop.seen(), std::vector<std::string>{"rescale --processes 2"});
}

}  // namespace
}  // namespace tl::control
