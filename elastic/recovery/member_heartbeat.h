// Member heartbeats: how a survivor learns, without waiting for a collective, that a member of
// the job on another host was lost (the recovery guard's member watcher sees this host's pids
// only). Torch-free; driven by the guard's watcher thread (no thread of its own).
//
// Every member with peers on other hosts binds a UDP socket on its host's address (the address
// its host name resolves to, or $TL_HEARTBEAT_ADDRESS) and publishes "id port address" in
// <recovery-dir>/members/<host>_<pid>.heartbeat, where any member, a grown one included, looks a
// peer up by the (host, pid) of the member table. Every kIntervalSeconds it sends each peer one
// datagram of 64 bytes:
//
//   offset  size  field
//        0     4  magic "TLHB"
//        4     1  version (1)
//        5     3  reserved, 0
//        8     8  sender id: random per process, published with its address (big-endian)
//       16     8  sequence number, from 1, one more per datagram (big-endian)
//       24     8  sender's clock: milliseconds since the Unix epoch (big-endian)
//       32    32  HMAC-SHA-256 over bytes [0, 32) under the heartbeat key
//
// The heartbeat key is HMAC-SHA-256(job key, "tl member heartbeat v1"), the job key being its
// control key (<output-dir>/control.key, created or reused by whichever process comes first). A
// datagram counts (the peer is alive) only when it is 64 bytes, well-formed, its MAC matches,
// its sender is a peer, its sequence number is above every one seen from that sender, and its
// clock is within kFreshnessSeconds of the receiver's: anything else is dropped and counts
// neither as alive nor as lost.
//
// A peer is lost when nothing valid came from it for the deadline ($TL_HEARTBEAT_DEADLINE,
// seconds, default 1.0: a loaded machine can stall a sender's thread for a few hundred ms), or
// at once when its host answered a datagram with "port unreachable" and nothing valid came from
// it for two intervals since (its process is gone and its host is up: a kill or a crash,
// found in about 0.1 s).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elastic/recovery/recovery_files.h"

namespace tl::elastic::heartbeat {

constexpr size_t kDatagramSize = 64;
constexpr double kIntervalSeconds = 0.05;
constexpr double kDefaultDeadlineSeconds = 1.0;
constexpr double kFreshnessSeconds = 10.0;
constexpr const char* kDeadlineEnv = "TL_HEARTBEAT_DEADLINE";
constexpr const char* kAddressEnv = "TL_HEARTBEAT_ADDRESS";

using Key = std::vector<uint8_t>;

// The heartbeat key derived from a job key.
Key deriveKey(const Key& jobKey);
// $TL_HEARTBEAT_DEADLINE when it is a number in [0.1, 600], else the default.
double deadlineSeconds();

struct Datagram {
  uint64_t sender = 0;
  uint64_t seq = 0;
  int64_t timeMs = 0;
};
std::string encode(const Datagram& d, const Key& key);

// What a receiver made of a datagram.
enum class Verdict { Valid, Malformed, Forged, UnknownSender, Replayed, Stale };
const char* verdictName(Verdict v);

// The receiving side's memory of its peers, without sockets: what accept() takes for alive.
class PeerTable {
 public:
  explicit PeerTable(Key key) : key_(std::move(key)) {}
  // A peer whose datagrams count from now on; its silence is counted from `now` (seconds, any
  // monotonic clock) until a datagram comes. Adding a known id does nothing.
  void add(uint64_t id, double now);
  void remove(uint64_t id);
  bool has(uint64_t id) const;
  // Checks a received datagram; a valid one marks its sender heard at `now`.
  Verdict accept(std::string_view bytes, double now, int64_t nowMs);
  // When the peer was last heard (or added); nullopt for an unknown id.
  std::optional<double> lastHeard(uint64_t id) const;

 private:
  struct Peer {
    uint64_t id = 0;
    uint64_t lastSeq = 0;
    double heardAt = 0;
  };
  Peer* find(uint64_t id);
  Key key_;
  std::vector<Peer> peers_;
};

// Where a member's heartbeats go.
struct Endpoint {
  uint64_t id = 0;
  std::string address;  // dotted IPv4
  uint16_t port = 0;
};
std::string endpointPath(const std::string& recoveryDir, const std::string& host, int64_t pid);
// The published endpoint of (host, pid); nullopt when none (yet) or malformed.
std::optional<Endpoint> lookupEndpoint(const std::string& recoveryDir, const std::string& host, int64_t pid);

// A lost peer and how it was found.
struct LostPeer {
  Member member;
  bool silent = false;  // true: nothing valid for the deadline; false: its port is closed
};

// One member's sockets: sends to its peers, receives from them, says who is lost.
class MemberHeartbeat {
 public:
  // Binds, and publishes this process's endpoint under `recoveryDir`. InputError/Error when the
  // address cannot be bound or the file written.
  MemberHeartbeat(const Key& jobKey, const std::string& recoveryDir, const std::string& host, int64_t pid);
  ~MemberHeartbeat();
  MemberHeartbeat(const MemberHeartbeat&) = delete;
  MemberHeartbeat& operator=(const MemberHeartbeat&) = delete;

  const Endpoint& self() const { return self_; }
  // The members on other hosts to watch (by rank; others are dropped).
  void setPeers(const std::vector<Member>& peers, double now);
  // One round (call every ~20 ms): sends when an interval passed, reads every datagram waiting,
  // looks up peers not yet published; returns the peers found lost since the last call (each
  // once; a lost peer is no longer watched).
  std::vector<LostPeer> poll(double now);

 private:
  struct Peer {
    Member member;
    std::optional<Endpoint> endpoint;
    int socket = -1;      // connected to the peer: its host's "port unreachable" arrives here
    double refusedAt = -1;  // when a send was last answered "port unreachable"
    double lookedUpAt = -1;
  };
  void connectPeer(Peer& p, double now);
  void closePeer(Peer& p);

  std::string recoveryDir_;
  Key key_;
  int socket_ = -1;
  Endpoint self_;
  uint64_t seq_ = 0;
  double sentAt_ = -1;
  double deadline_ = kDefaultDeadlineSeconds;
  PeerTable table_;
  std::vector<Peer> peers_;
};

}  // namespace tl::elastic::heartbeat
