#include "elastic/recovery/member_heartbeat.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "common/sha256.h"

namespace tl::elastic::heartbeat {
namespace {

constexpr char kMagic[4] = {'T', 'L', 'H', 'B'};
constexpr uint8_t kVersion = 1;
constexpr size_t kSignedBytes = 32;

void putU64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(char((v >> (8 * i)) & 0xff));
}
uint64_t getU64(std::string_view in, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | uint8_t(in[at + i]);
  return v;
}

std::string_view keyView(const Key& key) { return {reinterpret_cast<const char*>(key.data()), key.size()}; }

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The IPv4 address `host` resolves to (the hosts file or DNS), dotted; empty when none.
std::string resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return "";
  char text[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof(text));
  ::freeaddrinfo(found);
  return text;
}

sockaddr_in socketAddress(const std::string& address, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  TL_REQUIRE(::inet_pton(AF_INET, address.c_str(), &a.sin_addr) == 1, "heartbeat: '", address,
             "' is not an IPv4 address");
  return a;
}

int udpSocket() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  TL_CHECK(fd >= 0, "heartbeat: socket: ", std::strerror(errno));
  return fd;
}

}  // namespace

Key deriveKey(const Key& jobKey) {
  const Sha256Digest d = hmacSha256(keyView(jobKey), "tl member heartbeat v1");
  return Key(d.begin(), d.end());
}

double deadlineSeconds() {
  const char* v = std::getenv("TL_HEARTBEAT_DEADLINE");  // kDeadlineEnv (the layering check reads the name)
  if (v == nullptr || *v == 0) return kDefaultDeadlineSeconds;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return end != v && *end == 0 && std::isfinite(d) && d >= 0.1 && d <= 600 ? d : kDefaultDeadlineSeconds;
}

std::string encode(const Datagram& d, const Key& key) {
  std::string out(kMagic, 4);
  out.push_back(char(kVersion));
  out.append(3, '\0');
  putU64(out, d.sender);
  putU64(out, d.seq);
  putU64(out, uint64_t(d.timeMs));
  const Sha256Digest mac = hmacSha256(keyView(key), out);
  out.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return out;
}

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::Valid: return "valid";
    case Verdict::Malformed: return "malformed";
    case Verdict::Forged: return "forged";
    case Verdict::UnknownSender: return "unknown sender";
    case Verdict::Replayed: return "replayed";
    case Verdict::Stale: return "stale";
  }
  return "?";
}

PeerTable::Peer* PeerTable::find(uint64_t id) {
  auto it = std::find_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.id == id; });
  return it == peers_.end() ? nullptr : &*it;
}

void PeerTable::add(uint64_t id, double now) {
  if (find(id) == nullptr) peers_.push_back({id, 0, now});
}

void PeerTable::remove(uint64_t id) {
  peers_.erase(std::remove_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.id == id; }),
               peers_.end());
}

bool PeerTable::has(uint64_t id) const {
  return std::any_of(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.id == id; });
}

std::optional<double> PeerTable::lastHeard(uint64_t id) const {
  for (const Peer& p : peers_)
    if (p.id == id) return p.heardAt;
  return std::nullopt;
}

Verdict PeerTable::accept(std::string_view bytes, double now, int64_t nowMs) {
  if (bytes.size() != kDatagramSize || bytes.substr(0, 4) != std::string_view(kMagic, 4) ||
      uint8_t(bytes[4]) != kVersion || bytes[5] != 0 || bytes[6] != 0 || bytes[7] != 0)
    return Verdict::Malformed;
  const Sha256Digest mac = hmacSha256(keyView(key_), bytes.substr(0, kSignedBytes));
  if (!constantTimeEqual(mac.data(), mac.size(), bytes.data() + kSignedBytes, kDatagramSize - kSignedBytes))
    return Verdict::Forged;
  Peer* p = find(getU64(bytes, 8));
  if (p == nullptr) return Verdict::UnknownSender;
  const uint64_t seq = getU64(bytes, 16);
  if (seq <= p->lastSeq) return Verdict::Replayed;
  const int64_t timeMs = int64_t(getU64(bytes, 24));
  if (std::abs(double(timeMs - nowMs)) > kFreshnessSeconds * 1000) return Verdict::Stale;
  p->lastSeq = seq;
  p->heardAt = std::max(p->heardAt, now);
  return Verdict::Valid;
}

std::string endpointPath(const std::string& recoveryDir, const std::string& host, int64_t pid) {
  return joinPath(joinPath(recoveryDir, "members"), host + "_" + std::to_string(pid) + ".heartbeat");
}

std::optional<Endpoint> lookupEndpoint(const std::string& recoveryDir, const std::string& host, int64_t pid) {
  std::ifstream in(endpointPath(recoveryDir, host, pid));
  Endpoint e;
  std::string id;
  unsigned port = 0;
  if (!(in >> id >> port >> e.address) || id.size() != 16 || port == 0 || port > 65535) return std::nullopt;
  char* end = nullptr;
  e.id = std::strtoull(id.c_str(), &end, 16);
  if (*end != 0) return std::nullopt;
  e.port = uint16_t(port);
  sockaddr_in probe{};
  if (::inet_pton(AF_INET, e.address.c_str(), &probe.sin_addr) != 1) return std::nullopt;
  return e;
}

MemberHeartbeat::MemberHeartbeat(const Key& jobKey, const std::string& recoveryDir, const std::string& host,
                                 int64_t pid)
    : recoveryDir_(recoveryDir), key_(deriveKey(jobKey)), deadline_(deadlineSeconds()), table_(key_) {
  const char* given = std::getenv("TL_HEARTBEAT_ADDRESS");  // kAddressEnv
  self_.address = given != nullptr && *given != 0 ? std::string(given) : resolve(host);
  TL_REQUIRE(!self_.address.empty(), "heartbeat: host name '", host, "' resolves to no IPv4 address; set ",
             kAddressEnv);
  TL_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(&self_.id), sizeof(self_.id)) == 1, "RAND_bytes failed");
  socket_ = udpSocket();
  sockaddr_in a = socketAddress(self_.address, 0);
  if (::bind(socket_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    const std::string why = std::strerror(errno);
    ::close(socket_);
    inputError("heartbeat: cannot bind ", self_.address, ": ", why);
  }
  socklen_t len = sizeof(a);
  ::getsockname(socket_, reinterpret_cast<sockaddr*>(&a), &len);
  self_.port = ntohs(a.sin_port);
  std::filesystem::create_directories(joinPath(recoveryDir, "members"));
  std::ostringstream text;
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", (unsigned long long)self_.id);
  text << id << " " << self_.port << " " << self_.address << "\n";
  writeFileAtomic(endpointPath(recoveryDir, host, pid), text.str());
}

MemberHeartbeat::~MemberHeartbeat() {
  for (Peer& p : peers_) closePeer(p);
  if (socket_ >= 0) ::close(socket_);
}

void MemberHeartbeat::closePeer(Peer& p) {
  if (p.socket >= 0) ::close(p.socket);
  p.socket = -1;
}

void MemberHeartbeat::connectPeer(Peer& p, double now) {
  p.lookedUpAt = now;
  p.endpoint = lookupEndpoint(recoveryDir_, p.member.host, p.member.pid);
  if (!p.endpoint) return;
  p.socket = udpSocket();
  const sockaddr_in a = socketAddress(p.endpoint->address, p.endpoint->port);
  if (::connect(p.socket, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    closePeer(p);
    p.endpoint.reset();
    return;
  }
  table_.add(p.endpoint->id, now);  // its silence counts from now
}

void MemberHeartbeat::setPeers(const std::vector<Member>& peers, double now) {
  std::vector<Peer> next;
  for (const Member& m : peers) {
    auto it = std::find_if(peers_.begin(), peers_.end(),
                           [&](const Peer& p) { return p.member.host == m.host && p.member.pid == m.pid; });
    if (it != peers_.end()) {
      it->member.rank = m.rank;
      next.push_back(std::move(*it));
      it->socket = -1;
      it->endpoint.reset();
    } else {
      next.push_back({m, std::nullopt, -1, -1, -1});
    }
  }
  for (Peer& p : peers_) {
    if (p.endpoint) table_.remove(p.endpoint->id);
    closePeer(p);
  }
  peers_ = std::move(next);
  for (Peer& p : peers_)
    if (p.endpoint) table_.add(p.endpoint->id, now);
}

std::vector<LostPeer> MemberHeartbeat::poll(double now) {
  // Every datagram waiting: a receiver's own stall never makes a peer look silent.
  char buffer[2 * kDatagramSize];
  const int64_t nowMs = unixMs();
  for (;;) {
    const ssize_t n = ::recv(socket_, buffer, sizeof(buffer), MSG_TRUNC);
    if (n < 0) break;
    table_.accept(std::string_view(buffer, size_t(std::min<ssize_t>(n, ssize_t(sizeof(buffer))))), now, nowMs);
  }
  const bool send = sentAt_ < 0 || now - sentAt_ >= kIntervalSeconds;
  std::string datagram;
  if (send) {
    sentAt_ = now;
    datagram = encode({self_.id, ++seq_, nowMs}, key_);
  }
  std::vector<LostPeer> lost;
  for (Peer& p : peers_) {
    if (!p.endpoint) {
      if (p.lookedUpAt < 0 || now - p.lookedUpAt >= 0.2) connectPeer(p, now);
      if (!p.endpoint) continue;
    }
    if (send) {
      // A "port unreachable" from the peer's host (its process is gone) fails the next call on
      // this connected socket with ECONNREFUSED. Hosts rate-limit those answers (one a second
      // per destination after a burst of a few), so one is taken as the sign.
      char scratch;
      const bool refusedBefore = ::recv(p.socket, &scratch, 1, 0) < 0 && errno == ECONNREFUSED;
      const bool refusedNow =
          ::send(p.socket, datagram.data(), datagram.size(), MSG_NOSIGNAL) < 0 && errno == ECONNREFUSED;
      if (refusedBefore || refusedNow) p.refusedAt = now;
    }
    const double heard = table_.lastHeard(p.endpoint->id).value_or(now);
    // Refused since the last valid datagram, and nothing for two intervals since: gone.
    const bool gone = p.refusedAt > heard && now - heard > 2 * kIntervalSeconds;
    if (gone || now - heard > deadline_) lost.push_back({p.member, !gone});
  }
  for (const LostPeer& l : lost) {
    auto it = std::find_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.member == l.member; });
    table_.remove(it->endpoint->id);
    closePeer(*it);
    peers_.erase(it);
  }
  return lost;
}

}  // namespace tl::elastic::heartbeat
