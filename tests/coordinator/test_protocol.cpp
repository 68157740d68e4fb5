// The wire protocol: every message round-trips, every malformed line is an InputError that
// says what is wrong, and the line splitter bounds what an unterminated peer can make it hold.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/check.h"
#include "coordinator/protocol.h"

namespace tl::coordinator {
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

  ReportMessage p{{3, 1.25, 480}, {0.75, 470}, 0.125, {}};
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

TEST(Protocol, CacheFieldsRoundTripAndAreOptional) {
  RegisterMessage r{"img/0", 7, 1, 1, 8, 2, 5 << 20, 1000};
  auto reg = std::get<RegisterMessage>(decodeJobMessage(withoutNewline(encode(JobMessage{r}))));
  EXPECT_EQ(reg.cacheBytes, 5 << 20);
  EXPECT_EQ(reg.samples, 1000);
  RegisterMessage plain{"img/1", 7, 1, 1, 8, 2};
  const std::string plainLine = encode(JobMessage{plain});
  EXPECT_EQ(plainLine.find("cache_bytes"), std::string::npos) << "no cache, no cache fields";
  EXPECT_EQ(std::get<RegisterMessage>(decodeJobMessage(withoutNewline(plainLine))).cacheBytes, -1);

  ReportMessage p{{3, 1.25, 480}, {0.75, 470}, 0.125, {300, 180, 3000000, 1800000, 0.5, 4 << 20}};
  auto report = std::get<ReportMessage>(decodeJobMessage(withoutNewline(encode(JobMessage{p}))));
  EXPECT_EQ(report.cache.hits, 300);
  EXPECT_EQ(report.cache.misses, 180);
  EXPECT_EQ(report.cache.hitBytes, 3000000);
  EXPECT_EQ(report.cache.storageBytes, 1800000);
  EXPECT_EQ(report.cache.storageSeconds, 0.5);
  EXPECT_EQ(report.cache.budgetBytes, 4 << 20);

  auto assign = std::get<AssignMessage>(decodeCoordinatorMessage(
      withoutNewline(encode(CoordinatorMessage{AssignMessage{3, 123456}}))));
  EXPECT_EQ(assign.workers, 3);
  EXPECT_EQ(assign.cacheBytes, 123456);
  EXPECT_EQ(std::get<AssignMessage>(decodeCoordinatorMessage(R"({"type":"assign","workers":2})"))
                .cacheBytes,
            -1);

  const std::string reg1 =
      R"({"type":"register","protocol":1,"job":"j","pid":1,"compute_threads":1,"min_workers":1,)"
      R"("max_workers":4,"workers":1,)";
  expectRejected(reg1 + R"("cache_bytes":-1,"samples":5})", "field 'cache_bytes' must be between 0");
  expectRejected(reg1 + R"("cache_bytes":10})", "missing field 'samples'");
  expectRejected(reg1 + R"("cache_bytes":10,"samples":0})", "field 'samples' must be between 1");
  const std::string rep1 =
      R"({"type":"report","workers":2,"busy_s":1,"images_produced":10,"compute_s":1,)"
      R"("images_consumed":1,"wait_s":0,"cache_bytes":100,"cache_hits":1,"cache_misses":1,)"
      R"("hit_bytes":5,"storage_bytes":5,)";
  expectRejected(rep1 + R"("storage_s":-0.5})", "field 'storage_s' must be finite and >= 0");
  expectRejected(rep1 + R"("storage_s":"1"})", "field 'storage_s' must be a number");
  expectRejected(rep1.substr(0, rep1.size() - 1) + "}", "missing field 'storage_s'");
}

// Random mutations of valid lines (bytes flipped, cut, duplicated, numbers swapped for
// extremes): every line is either a valid message with fields in range or an InputError.
TEST(Protocol, FuzzedLinesAreDecodedOrRejectedNeverAnythingElse) {
  const std::vector<std::string> seeds = {
      withoutNewline(encode(JobMessage{RegisterMessage{"img/0", 7, 1, 1, 8, 2, 1 << 20, 1000}})),
      withoutNewline(encode(JobMessage{ReportMessage{
          {3, 1.25, 480}, {0.75, 470}, 0.125, {300, 180, 3000000, 1800000, 0.5, 4 << 20}}})),
      withoutNewline(encode(CoordinatorMessage{AssignMessage{3, 123456}}))};
  const std::vector<std::string> extremes = {"-1", "1e308", "18446744073709551616", "null",
                                             "\"x\"", "[]", "{}", "0.5", "-0"};
  std::mt19937 rng(1818);
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string line = seeds[rng() % seeds.size()];
    const int edits = 1 + int(rng() % 3);
    for (int e = 0; e < edits && !line.empty(); ++e) {
      const size_t at = rng() % line.size();
      switch (rng() % 4) {
        case 0: line[at] = char(rng() % 256); break;
        case 1: line.erase(at); break;
        case 2: line.insert(at, line.substr(at, rng() % 8)); break;
        default: {
          const size_t colon = line.find(':', at);
          if (colon == std::string::npos) break;
          const size_t end = line.find_first_of(",}", colon);
          if (end == std::string::npos) break;
          line.replace(colon + 1, end - colon - 1, extremes[rng() % extremes.size()]);
        }
      }
    }
    try {
      if (line.find("assign") != std::string::npos) {
        auto m = decodeCoordinatorMessage(line);
        if (auto* a = std::get_if<AssignMessage>(&m)) {
          ASSERT_GE(a->workers, 0);
          ASSERT_GE(a->cacheBytes, -1);
        }
      } else {
        auto m = decodeJobMessage(line);
        if (auto* r = std::get_if<RegisterMessage>(&m)) {
          ASSERT_TRUE(r->cacheBytes == -1 || (r->cacheBytes >= 0 && r->samples >= 1)) << line;
        } else if (auto* p = std::get_if<ReportMessage>(&m)) {
          ASSERT_TRUE(std::isfinite(p->cache.storageSeconds) && p->cache.storageSeconds >= 0);
          ASSERT_GE(p->cache.hits, 0);
          ASSERT_GE(p->cache.misses, 0);
          ASSERT_GE(p->cache.storageBytes, 0);
        }
      }
      ++accepted;
    } catch (const InputError&) {
      ++rejected;
    }
  }
  EXPECT_GT(accepted, 100) << "mutations that keep a valid message";
  EXPECT_GT(rejected, 1000);
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
}  // namespace tl::coordinator
