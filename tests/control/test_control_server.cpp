// The control server with a fake status and a stand-in training loop: what it serves, and
// what it refuses (wrong key, garbage, missing MAC, replay, tampering, stale timestamps,
// oversized frames, half messages, slow clients, a thousand connections) while it stays
// responsive and leaks no descriptor.
#include <gtest/gtest.h>

#include <functional>
#include <sys/resource.h>
#include <unistd.h>

#include <future>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"
#include "control/control_client.h"
#include "control/control_key.h"
#include "tests/control/control_test_util.h"
#include "tests/support/run_command.h"

namespace tl::control {
namespace {

using test_util::RawConnection;
using test_util::rejectionOf;
using test_util::Responder;
using test_util::waitFor;

const char* kStatus = R"({"step":12,"epoch":1,"processes":2,"placement":[2,2]})";

ServerOptions testOptions(const std::string& name) {
  ServerOptions o;
  o.jobDir = ::tl::testing::freshDir("control_" + name);
  o.requestDeadlineSeconds = 0.4;
  o.status = [] { return std::string(kStatus); };
  return o;
}

Target targetOf(const ControlServer& server) {
  return Target{"127.0.0.1", server.port(), server.key(), ""};
}

Request rescaleTo(int processes) {
  Request r;
  r.command = Command::Rescale;
  r.processes = processes;
  return r;
}

// The server counts an exchange once its thread is done with it, which may be just after the
// client has its answer.
bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 200; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

Reply answer(const Request& r) {
  if (r.command == Command::Rescale && r.processes > 8)
    return {Outcome::Refused, "only 8 devices are free", ""};
  return {Outcome::Done, describe(r) + ": done", ""};
}

bool statusServed(const ControlServer& server) {
  const Reply r = send(targetOf(server), Request{}, 5);
  return r.outcome == Outcome::Done && r.body == kStatus;
}

TEST(ControlServer, AnswersStatusOnItsThread) {
  ControlServer server(testOptions("status"));
  const Reply r = send(targetOf(server), Request{}, 5);
  EXPECT_EQ(r.outcome, Outcome::Done);
  EXPECT_EQ(r.body, kStatus);
  EXPECT_EQ(server.queued(), 0u);
  EXPECT_TRUE(eventually([&] { return server.counters().served == 1u; })) << "served: " << server.counters().served;
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
}

TEST(ControlServer, PublishesItsAddressAndRemovesIt) {
  ServerOptions o = testOptions("address");
  const std::string path = addressPath(o.jobDir);
  {
    ControlServer server(o);
    const auto j = nlohmann::json::parse(readFile(path));
    EXPECT_EQ(j.at("host"), "127.0.0.1");
    EXPECT_EQ(j.at("port"), server.port());
    EXPECT_EQ(j.at("pid"), ::getpid());
    const Target t = targetFromJobDir(o.jobDir);
    EXPECT_EQ(t.port, server.port());
    EXPECT_EQ(t.key, server.key());
  }
  EXPECT_FALSE(fileExists(path));
}

TEST(ControlServer, QueuedRequestsWaitForTheTrainingLoop) {
  ControlServer server(testOptions("queue"));
  auto grow =
      std::async(std::launch::async, [&] { return send(targetOf(server), rescaleTo(3), 5); });
  ASSERT_TRUE(waitFor([&] { return server.queued() == 1; }, 5));
  auto pending = server.take();
  ASSERT_TRUE(pending);
  EXPECT_FALSE(server.take());
  EXPECT_EQ(describe(pending->request()), "rescale --processes 3");
  pending->reply({Outcome::Done, "rescaled to 3 processes", ""});
  pending->reply({Outcome::Failed, "a second answer is ignored", ""});
  const Reply r = grow.get();
  EXPECT_EQ(r.outcome, Outcome::Done);
  EXPECT_EQ(r.message, "rescaled to 3 processes");

  Responder loop(server, answer);
  EXPECT_EQ(send(targetOf(server), rescaleTo(9), 5).outcome, Outcome::Refused);
  Request move;
  move.command = Command::Placement;
  move.placement = {3, 1};
  EXPECT_EQ(send(targetOf(server), move, 5).message, "placement 3,1: done");
  EXPECT_EQ(loop.seen(), (std::vector<std::string>{"rescale --processes 9", "placement 3,1"}));
}

TEST(ControlServer, ARequestDroppedWithoutAnAnswerFails) {
  ControlServer server(testOptions("dropped"));
  auto stop = std::async(std::launch::async, [&] {
    Request r;
    r.command = Command::Stop;
    return send(targetOf(server), r, 5);
  });
  ASSERT_TRUE(waitFor([&] { return server.queued() == 1; }, 5));
  server.take().reset();  // destroyed unanswered
  const Reply r = stop.get();
  EXPECT_EQ(r.outcome, Outcome::Failed);
  EXPECT_EQ(r.message, "the job dropped the request without an answer");
}

TEST(ControlServer, AnswerAfterTheClientGaveUpIsDropped) {
  ControlServer server(testOptions("gave_up"));
  EXPECT_THROW(send(targetOf(server), rescaleTo(2), 0.2), TimeoutError);
  auto pending = server.take();
  ASSERT_TRUE(pending);
  pending->reply({Outcome::Done, "too late", ""});
  EXPECT_TRUE(statusServed(server));
  EXPECT_TRUE(waitFor([&] { return server.openConnections() == 0; }, 2));
}

TEST(ControlServer, StoppingAnswersQueuedRequestsMovedAndTakenOnesFailed) {
  auto server = std::make_unique<ControlServer>(testOptions("moved"));
  const Target t = targetOf(*server);
  auto taken = std::async(std::launch::async, [&] { return send(t, rescaleTo(2), 5); });
  ASSERT_TRUE(waitFor([&] { return server->queued() == 1; }, 5));
  auto pending = server->take();
  auto queued = std::async(std::launch::async, [&] { return send(t, rescaleTo(3), 5); });
  ASSERT_TRUE(waitFor([&] { return server->queued() == 1; }, 5));
  server.reset();
  EXPECT_EQ(queued.get().outcome, Outcome::Moved);
  const Reply failed = taken.get();
  EXPECT_EQ(failed.outcome, Outcome::Failed);
  EXPECT_NE(failed.message.find("may or may not"), std::string::npos);
  pending->reply({Outcome::Done, "after the server stopped: dropped", ""});
}

TEST(ControlServer, WrongKeyIsRefusedAndTheJobGoesOn) {
  ControlServer server(testOptions("wrong_key"));
  Target wrong = targetOf(server);
  wrong.key[0] ^= 1;
  try {
    send(wrong, rescaleTo(2), 5);
    FAIL() << "a request under the wrong key was answered";
  } catch (const RejectedError& e) {
    EXPECT_EQ(e.why(), Rejection::Unauthenticated);
  }
  EXPECT_EQ(server.queued(), 0u);
  EXPECT_TRUE(eventually([&] { return server.counters().refused == 1u; })) << "refused: " << server.counters().refused;
  EXPECT_TRUE(statusServed(server));
}

TEST(ControlServer, GarbageAndMissingMacAreRefused) {
  ControlServer server(testOptions("garbage"));
  {
    RawConnection http(server.port());
    http.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(100, 'x'));
    bool closed = false;
    EXPECT_EQ(rejectionOf(http.readUntilClosed(2, &closed)), int(Rejection::Malformed));
    EXPECT_TRUE(closed);
  }
  {
    // A frame without its MAC: the server waits for the rest, then drops it at the deadline.
    std::string frame = encodeRequest(rescaleTo(2), server.key(), nowMs(), randomNonce());
    frame.resize(frame.size() - kMacSize);
    RawConnection noMac(server.port());
    noMac.send(frame);
    bool closed = false;
    EXPECT_EQ(noMac.readUntilClosed(2, &closed), "");
    EXPECT_TRUE(closed);
  }
  {
    // The right length with a MAC of zeros.
    std::string frame = encodeRequest(rescaleTo(2), server.key(), nowMs(), randomNonce());
    std::fill(frame.end() - kMacSize, frame.end(), '\0');
    RawConnection zeros(server.port());
    zeros.send(frame);
    EXPECT_EQ(rejectionOf(zeros.readUntilClosed(2)), int(Rejection::Unauthenticated));
  }
  EXPECT_EQ(server.queued(), 0u);
  EXPECT_TRUE(eventually([&] { return server.counters().refused == 2u; })) << "refused: " << server.counters().refused;
  EXPECT_TRUE(eventually([&] { return server.counters().dropped == 1u; })) << "dropped: " << server.counters().dropped;
  EXPECT_TRUE(statusServed(server));
}

TEST(ControlServer, ReplayedFrameIsRefused) {
  ControlServer server(testOptions("replay"));
  Responder loop(server, answer);
  const std::string frame = encodeRequest(rescaleTo(2), server.key(), nowMs(), randomNonce());
  {
    RawConnection first(server.port());
    first.send(frame);
    const std::string reply = first.readUntilClosed(5);
    std::string error;
    auto h = parseHeader(reply, &error);
    ASSERT_TRUE(h) << error;
    EXPECT_EQ(h->kind, FrameKind::Reply);
    EXPECT_TRUE(macMatches(reply, server.key()));
  }
  RawConnection again(server.port());
  again.send(frame);
  EXPECT_EQ(rejectionOf(again.readUntilClosed(5)), int(Rejection::Replayed));
  EXPECT_EQ(loop.seen().size(), 1u);
}

TEST(ControlServer, TamperedByteIsRefused) {
  ControlServer server(testOptions("tamper"));
  Request r;
  r.command = Command::Placement;
  r.placement = {1, 1};
  std::string frame = encodeRequest(r, server.key(), nowMs(), randomNonce());
  frame[frame.size() - kMacSize - 1] = 3;  // placement 1,3
  RawConnection c(server.port());
  c.send(frame);
  EXPECT_EQ(rejectionOf(c.readUntilClosed(5)), int(Rejection::Unauthenticated));
  EXPECT_EQ(server.queued(), 0u);
}

TEST(ControlServer, StaleTimestampsAreRefused) {
  ServerOptions o = testOptions("stale");
  o.clockSkewSeconds = 30;
  ControlServer server(o);
  for (int64_t offset : {-31000, +31000}) {
    RawConnection c(server.port());
    c.send(encodeRequest(Request{}, server.key(), nowMs() + offset, randomNonce()));
    EXPECT_EQ(rejectionOf(c.readUntilClosed(5)), int(Rejection::Stale)) << offset;
  }
  RawConnection skewed(server.port());  // within the skew: served
  skewed.send(encodeRequest(Request{}, server.key(), nowMs() - 20000, randomNonce()));
  EXPECT_GT(skewed.readUntilClosed(5).size(), kHeaderSize + 1);
  EXPECT_TRUE(eventually([&] { return server.counters().refused == 2u; })) << "refused: " << server.counters().refused;
}

TEST(ControlServer, OversizedFrameIsDroppedAtTheHeader) {
  ControlServer server(testOptions("oversized"));
  std::string frame = encodeRequest(Request{}, server.key(), nowMs(), randomNonce());
  frame[8] = 0x10;  // a 256 MiB payload
  RawConnection c(server.port());
  c.send(frame.substr(0, kHeaderSize));
  bool closed = false;
  EXPECT_EQ(rejectionOf(c.readUntilClosed(2, &closed)), int(Rejection::Malformed));
  EXPECT_TRUE(closed);
  EXPECT_TRUE(eventually([&] { return server.counters().dropped == 1u; })) << "dropped: " << server.counters().dropped;
}

TEST(ControlServer, HalfMessageIsDroppedAtTheDeadlineWhileOthersAreServed) {
  ControlServer server(testOptions("half"));
  const std::string frame = encodeRequest(Request{}, server.key(), nowMs(), randomNonce());
  RawConnection half(server.port());
  half.send(frame.substr(0, frame.size() / 2));
  const auto start = Clock::now();
  EXPECT_TRUE(statusServed(server));
  EXPECT_TRUE(statusServed(server));
  bool closed = false;
  half.readUntilClosed(3, &closed);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(closed);
  EXPECT_GT(waited, 0.3);
  EXPECT_LT(waited, 1.5);
  EXPECT_TRUE(eventually([&] { return server.counters().dropped == 1u; })) << "dropped: " << server.counters().dropped;
  EXPECT_TRUE(eventually([&] { return server.counters().served == 2u; })) << "served: " << server.counters().served;
}

TEST(ControlServer, SlowClientIsDroppedAndAQuickOneIsNot) {
  ControlServer server(testOptions("slow"));
  {
    // Three pieces within the deadline: served.
    const std::string frame = encodeRequest(Request{}, server.key(), nowMs(), randomNonce());
    RawConnection c(server.port());
    for (size_t at = 0; at < frame.size(); at += frame.size() / 3 + 1) {
      c.send(frame.substr(at, frame.size() / 3 + 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_GT(c.readUntilClosed(5).size(), kHeaderSize + 1);
  }
  // A byte every 40 ms would take ~2.5 s: dropped at 0.4 s.
  const std::string frame = encodeRequest(Request{}, server.key(), nowMs(), randomNonce());
  RawConnection slow(server.port());
  bool closed = false;
  const auto start = Clock::now();
  for (char byte : frame) {
    if (::send(slow.fd(), &byte, 1, MSG_NOSIGNAL) != 1) {
      closed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    if (Clock::now() - start > std::chrono::seconds(1)) break;
  }
  if (!closed) slow.readUntilClosed(2, &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(eventually([&] { return server.counters().dropped == 1u; })) << "dropped: " << server.counters().dropped;
  EXPECT_TRUE(eventually([&] { return server.counters().served == 1u; })) << "served: " << server.counters().served;
}

TEST(ControlServer, AThousandConnectionsDoNotLockUsersOut) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 2500 && limit.rlim_max >= 2500) {
    limit.rlim_cur = 2500;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  const int kConnections = limit.rlim_cur >= 2500 ? 1000 : int(limit.rlim_cur / 3);
  ServerOptions o = testOptions("flood");
  o.requestDeadlineSeconds = 2;
  auto server = std::make_unique<ControlServer>(o);
  Responder loop(*server, answer);
  ASSERT_TRUE(statusServed(*server));
  // The server closes its end just after the reply is sent, maybe after the client read it.
  ASSERT_TRUE(waitFor([&] { return server->openConnections() == 0; }, 5));
  const int before = test_util::openDescriptors();
  {
    std::vector<std::unique_ptr<RawConnection>> flood;
    const std::string junk = encodeRequest(Request{}, Key(32, 1), nowMs(), randomNonce());
    for (int i = 0; i < kConnections; ++i) {
      flood.push_back(std::make_unique<RawConnection>(server->port()));
      if (i % 3 == 0) flood.back()->send(junk.substr(0, 20));  // half headers
    }
    // A user still gets in, quickly, while the flood holds its connections open.
    const auto start = Clock::now();
    const Reply r = send(targetOf(*server), rescaleTo(2), 5);
    EXPECT_EQ(r.outcome, Outcome::Done);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
    EXPECT_TRUE(statusServed(*server));
    EXPECT_LE(server->openConnections(), size_t(o.maxConnections));
    EXPECT_GE(server->counters().dropped, uint64_t(kConnections - o.maxConnections));
  }
  EXPECT_TRUE(waitFor([&] { return server->openConnections() == 0; }, 5));
  EXPECT_EQ(test_util::openDescriptors(), before);
}

TEST(ControlServer, BadBindAddressNamesIt) {
  ServerOptions o = testOptions("bind");
  o.bind = "no-such-host.invalid";
  try {
    ControlServer server(o);
    FAIL() << "bound to " << server.address();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-host.invalid"), std::string::npos) << e.what();
  }
  ControlServer first(testOptions("bind_first"));
  o.bind = "127.0.0.1";
  o.port = first.port();
  try {
    ControlServer second(o);
    FAIL() << "two servers on one port";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(first.address()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tl::control
