// Member heartbeats (elastic/recovery/member_heartbeat.h): forged, truncated, extended, replayed,
// stale and mutated datagrams are dropped and never count as alive (a seeded mutation fuzzer
// over the parser), and over real UDP sockets on loopback a peer whose process closed its socket
// is lost at once, a silent one after the deadline, and a silent one stays lost while an
// attacker sends forgeries and replays in its name.
#include "elastic/recovery/member_heartbeat.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <thread>

#include "tests/support/run_command.h"

namespace tl::elastic::heartbeat {
namespace {

const Key kJobKey(32, 7);

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

TEST(HeartbeatDatagram, ValidOnceThenReplayed) {
  const Key key = deriveKey(kJobKey);
  PeerTable table(key);
  table.add(42, 0.0);
  const std::string d = encode({42, 1, nowMs()}, key);
  ASSERT_EQ(d.size(), kDatagramSize);
  EXPECT_EQ(table.accept(d, 5.0, nowMs()), Verdict::Valid);
  EXPECT_EQ(*table.lastHeard(42), 5.0);
  EXPECT_EQ(table.accept(d, 6.0, nowMs()), Verdict::Replayed);  // the same datagram again
  EXPECT_EQ(table.accept(encode({42, 3, nowMs()}, key), 7.0, nowMs()), Verdict::Valid);
  EXPECT_EQ(table.accept(encode({42, 2, nowMs()}, key), 8.0, nowMs()), Verdict::Replayed);  // older
  EXPECT_EQ(*table.lastHeard(42), 7.0);
}

TEST(HeartbeatDatagram, ForgedUnknownStaleAndCutDatagramsAreDropped) {
  const Key key = deriveKey(kJobKey);
  PeerTable table(key);
  table.add(42, 1.0);
  const int64_t t = nowMs();
  // Another job's key, the job key itself (not the derived one), an unknown sender.
  EXPECT_EQ(table.accept(encode({42, 1, t}, deriveKey(Key(32, 8))), 2.0, t), Verdict::Forged);
  EXPECT_EQ(table.accept(encode({42, 1, t}, kJobKey), 2.0, t), Verdict::Forged);
  EXPECT_EQ(table.accept(encode({43, 1, t}, key), 2.0, t), Verdict::UnknownSender);
  // A clock too far off either way: an old datagram replayed to a receiver that never heard it.
  EXPECT_EQ(table.accept(encode({42, 1, t - 11000}, key), 2.0, t), Verdict::Stale);
  EXPECT_EQ(table.accept(encode({42, 2, t + 11000}, key), 2.0, t), Verdict::Stale);
  const std::string good = encode({42, 5, t}, key);
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_EQ(table.accept(good.substr(0, n), 2.0, t), Verdict::Malformed) << "cut to " << n;
  EXPECT_EQ(table.accept(good + "x", 2.0, t), Verdict::Malformed);
  EXPECT_EQ(*table.lastHeard(42), 1.0);  // nothing above counted as alive
  // A stale or refused datagram does not use up its sequence number.
  EXPECT_EQ(table.accept(good, 3.0, t), Verdict::Valid);
}

TEST(HeartbeatDatagram, EveryBitFlipIsDropped) {
  const Key key = deriveKey(kJobKey);
  const int64_t t = nowMs();
  const std::string good = encode({42, 9, t}, key);
  for (size_t bit = 0; bit < 8 * good.size(); ++bit) {
    PeerTable table(key);
    table.add(42, 1.0);
    std::string bad = good;
    bad[bit / 8] = char(bad[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_NE(table.accept(bad, 2.0, t), Verdict::Valid) << "bit " << bit;
    EXPECT_EQ(*table.lastHeard(42), 1.0);
  }
}

// Seeded mutations of valid datagrams: byte changes, cuts, growth, splices of two datagrams.
TEST(HeartbeatDatagram, MutationFuzzNeverCountsAsAlive) {
  const Key key = deriveKey(kJobKey);
  const int64_t t = nowMs();
  std::mt19937_64 rng(20261128);
  PeerTable table(key);
  table.add(42, 1.0);
  table.add(77, 1.0);
  int valid = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t sender = rng() % 2 ? 42 : 77;
    std::string d = encode({sender, 1000000 + uint64_t(i), t}, key);
    const std::string other = encode({sender ^ 1, uint64_t(i), t + 1}, key);
    switch (rng() % 4) {
      case 0: d[rng() % d.size()] = char(rng()); break;
      case 1: d.resize(rng() % d.size()); break;
      case 2: d.append(1 + rng() % 64, char(rng())); break;
      case 3: d = d.substr(0, 32) + other.substr(32); break;
    }
    if (table.accept(d, 2.0, t) == Verdict::Valid) ++valid;  // a byte "changed" to itself
  }
  // Only a mutation that changed nothing may pass; it must be rare, and never a splice.
  EXPECT_LT(valid, 20000 / 200);
  EXPECT_EQ(table.accept(encode({42, 1, t}, key), 3.0, t), Verdict::Replayed);
}

// Two members on "other hosts" of loopback (one process, two heartbeats).
class HeartbeatSockets : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv(kAddressEnv, "127.0.0.1", 1);
    ::setenv(kDeadlineEnv, "0.4", 1);
    dir_ = ::tl::testing::freshDir("member_heartbeat");
    a_ = std::make_unique<MemberHeartbeat>(kJobKey, dir_, "hostA", 1001);
    b_ = std::make_unique<MemberHeartbeat>(kJobKey, dir_, "hostB", 1002);
    a_->setPeers({{1, "hostB", 1002}}, now());
    b_->setPeers({{0, "hostA", 1001}}, now());
  }
  void TearDown() override {
    ::unsetenv(kAddressEnv);
    ::unsetenv(kDeadlineEnv);
  }
  // Polls `a` (and `b` while given) every 20 ms until `a` finds a loss or `seconds` pass.
  std::vector<LostPeer> run(double seconds, MemberHeartbeat* b, const std::function<void()>& each = {}) {
    const double until = now() + seconds;
    while (now() < until) {
      if (b) {
        EXPECT_TRUE(b->poll(now()).empty());
      }
      if (each) each();
      auto lost = a_->poll(now());
      if (!lost.empty()) return lost;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {};
  }
  std::string dir_;
  std::unique_ptr<MemberHeartbeat> a_, b_;
};

TEST_F(HeartbeatSockets, PublishedEndpointIsFound) {
  const auto e = lookupEndpoint(dir_, "hostB", 1002);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->id, b_->self().id);
  EXPECT_EQ(e->port, b_->self().port);
  EXPECT_EQ(e->address, "127.0.0.1");
  EXPECT_FALSE(lookupEndpoint(dir_, "hostC", 1).has_value());
}

TEST_F(HeartbeatSockets, ClosedPeerIsLostAtOnceAndSilentOneAfterTheDeadline) {
  EXPECT_TRUE(run(1.0, b_.get()).empty()) << "a live peer was counted lost";
  // The peer's process ends: its socket is closed and its host answers "port unreachable".
  b_.reset();
  const double closedAt = now();
  auto lost = run(2.0, nullptr);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].member.host, "hostB");
  EXPECT_FALSE(lost[0].silent);
  EXPECT_LT(now() - closedAt, 0.35) << "a closed peer should be found within a few intervals";
}

TEST_F(HeartbeatSockets, SilentPeerStaysLostUnderForgeriesAndReplays) {
  // b sends for a while; an attacker records nothing but knows b's id and a's port.
  EXPECT_TRUE(run(0.5, b_.get()).empty());
  const int raw = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(raw, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(a_->self().port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  const Key right = deriveKey(kJobKey);
  uint64_t forgedSeq = 1u << 30;
  auto attack = [&] {
    const std::string forged = encode({b_->self().id, ++forgedSeq, nowMs()}, deriveKey(Key(32, 9)));
    const std::string replayed = encode({b_->self().id, 1, nowMs()}, right);  // seq 1: seen long ago
    const std::string cut = encode({b_->self().id, ++forgedSeq, nowMs()}, right).substr(0, 40);
    for (const std::string* d : {&forged, &replayed, &cut})
      (void)::sendto(raw, d->data(), d->size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
  };
  // b goes silent (its process hangs: the socket stays open, so no "port unreachable").
  const double silentAt = now();
  auto lost = run(2.0, nullptr, attack);
  ::close(raw);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_TRUE(lost[0].silent);
  const double took = now() - silentAt;
  EXPECT_GE(took, 0.35) << "lost before the deadline";
  EXPECT_LT(took, 1.2) << "the forgeries kept a silent peer alive";
}

}  // namespace
}  // namespace tl::elastic::heartbeat
