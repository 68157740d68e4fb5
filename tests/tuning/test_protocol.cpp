// The wire protocol: every message round-trips, every malformed line is an InputError that
// says what is wrong, and the line splitter bounds what an unterminated peer can make it hold.
#include <gtest/gtest.h>

#include "common/check.h"
#include "dataload/tuning/protocol.h"

namespace tl::tuning {
namespace {

std::string withoutNewline(std::string line) {
  EXPECT_EQ(line.back(), '\n');
  line.pop_back();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  return line;
}

TEST(Protocol, JobMessagesRoundTrip) {
  RegisterMessage r{"resnet/3", 4242, 2, 1, 6, 2};
  auto decoded = std::get<RegisterMessage>(decodeJobMessage(withoutNewline(encode(JobMessage{r}))));
  EXPECT_EQ(decoded.job, "resnet/3");
  EXPECT_EQ(decoded.pid, 4242);
  EXPECT_EQ(decoded.computeThreads, 2);
  EXPECT_EQ(decoded.minWorkers, 1);
  EXPECT_EQ(decoded.maxWorkers, 6);
  EXPECT_EQ(decoded.workers, 2);

  ReportMessage p{{3, 1.25, 480}, {0.75, 470}, 0.125};
  auto report = std::get<ReportMessage>(decodeJobMessage(withoutNewline(encode(JobMessage{p}))));
  EXPECT_EQ(report.loader.workers, 3);
  EXPECT_EQ(report.loader.busySeconds, 1.25);
  EXPECT_EQ(report.loader.images, 480);
  EXPECT_EQ(report.compute.computeSeconds, 0.75);
  EXPECT_EQ(report.compute.images, 470);
  EXPECT_EQ(report.waitSeconds, 0.125);

  EXPECT_TRUE(std::holds_alternative<LeaveMessage>(
      decodeJobMessage(withoutNewline(encode(JobMessage{LeaveMessage{}})))));
}

TEST(Protocol, CoordinatorMessagesRoundTrip) {
  auto assign =
      decodeCoordinatorMessage(withoutNewline(encode(CoordinatorMessage{AssignMessage{5}})));
  EXPECT_EQ(std::get<AssignMessage>(assign).workers, 5);
  auto error = decodeCoordinatorMessage(
      withoutNewline(encode(CoordinatorMessage{ErrorMessage{"bad \"x\"\n\xff"}})));
  EXPECT_NE(std::get<ErrorMessage>(error).message.find("bad \"x\""), std::string::npos);
}

TEST(Protocol, UnknownKeysAreIgnored) {
  auto m = decodeJobMessage(R"({"type":"leave","reason":"done","extra":[1,2]})");
  EXPECT_TRUE(std::holds_alternative<LeaveMessage>(m));
}

void expectRejected(const std::string& line, const std::string& expected) {
  try {
    decodeJobMessage(line);
    ADD_FAILURE() << "accepted: " << line;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "line: " << line << "\nerror: " << e.what();
  }
}

TEST(Protocol, MalformedMessagesSayWhatIsWrong) {
  const std::string reg =
      R"("type":"register","protocol":1,"job":"j","pid":1,"compute_threads":1,"min_workers":1,)";
  expectRejected("", "not valid JSON");
  expectRejected("{\"type\":\"report\"", "not valid JSON");
  expectRejected("[1,2,3]", "expected a JSON object");
  expectRejected("{}", "missing field 'type'");
  expectRejected(R"({"type":7})", "field 'type' must be a string");
  expectRejected(R"({"type":"hello"})", "unknown message type 'hello'");
  expectRejected("{" + reg + R"("max_workers":4})", "missing field 'workers'");
  expectRejected("{" + reg + R"("max_workers":4,"workers":"2"})",
                 "field 'workers' must be an integer");
  expectRejected("{" + reg + R"("max_workers":0,"workers":1})",
                 "field 'max_workers' must be between 1");
  expectRejected("{" + reg + R"("max_workers":4,"workers":-1})",
                 "field 'workers' must be between 0");
  expectRejected("{" + reg + R"("max_workers":4,"workers":1.5})", "must be an integer");
  expectRejected(R"({"type":"register","protocol":2})", "protocol version 2 is not supported");
  expectRejected(R"({"type":"register","protocol":1,"job":"","pid":1})",
                 "field 'job' must be 1 to 256");
  expectRejected(R"({"type":"register","protocol":1,"job":"j","pid":99999999999})", "field 'pid'");
  expectRejected(R"({"type":"register","protocol":1,"job":"j","pid":18446744073709551615})",
                 "field 'pid'");
  const std::string report = R"("type":"report","workers":2,"busy_s":1,"images_produced":10,)";
  expectRejected("{" + report + R"("compute_s":-1,"images_consumed":1,"wait_s":0})",
                 "field 'compute_s' must be finite and >= 0");
  expectRejected("{" + report + R"("compute_s":1e999,"images_consumed":1,"wait_s":0})",
                 "not valid JSON");
  expectRejected("{" + report + R"("compute_s":1,"images_consumed":-5,"wait_s":0})",
                 "field 'images_consumed' must be between 0");
  expectRejected("{" + report + R"("compute_s":1,"images_consumed":5,"wait_s":null})",
                 "field 'wait_s' must be a number");
}

TEST(Protocol, LineBufferSplitsAndBoundsLines) {
  LineBuffer buffer;
  std::string line;
  buffer.append("ab", 2);
  EXPECT_FALSE(buffer.nextLine(line));
  buffer.append("c\nde\n\nf", 7);
  ASSERT_TRUE(buffer.nextLine(line));
  EXPECT_EQ(line, "abc");
  ASSERT_TRUE(buffer.nextLine(line));
  EXPECT_EQ(line, "de");
  ASSERT_TRUE(buffer.nextLine(line));
  EXPECT_EQ(line, "");
  EXPECT_FALSE(buffer.nextLine(line));
  buffer.append("g\n", 2);
  ASSERT_TRUE(buffer.nextLine(line));
  EXPECT_EQ(line, "fg");

  LineBuffer endless;
  std::string chunk(4096, 'x');
  EXPECT_THROW(
      {
        for (int i = 0; i < 100; ++i) endless.append(chunk.data(), chunk.size());
      },
      InputError);
}

}  // namespace
}  // namespace tl::tuning
