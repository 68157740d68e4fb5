#include "control/control_protocol.h"

#include <openssl/rand.h>

#include <chrono>
#include <cstring>
#include <set>

#include "common/check.h"
#include "common/sha256.h"

namespace tl::control {
namespace {

constexpr char kMagic[4] = {'T', 'L', 'C', 'T'};

// Big-endian writer and a bounds-checked reader: the only code that touches payload bytes.
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(char(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void bytes(std::string_view b) { out_.append(b.data(), b.size()); }
  std::string& out() { return out_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(char((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u8(uint8_t* v) { return get(v, 1); }
  bool u16(uint16_t* v) { return get(v, 2); }
  bool u32(uint32_t* v) { return get(v, 4); }
  bool u64(uint64_t* v) { return get(v, 8); }
  bool bytes(size_t n, std::string* v) {
    if (in_.size() - pos_ < n) return false;
    v->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  template <typename T>
  bool get(T* v, size_t n) {
    if (in_.size() - pos_ < n) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x = (x << 8) | uint8_t(in_[pos_ + i]);
    pos_ += n;
    *v = T(x);
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

std::string keyView(const Key& key) { return std::string(key.begin(), key.end()); }

std::string joinInts(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string checkInts(const std::vector<int>& v, const char* what, int min, int max) {
  if (v.size() > kMaxPlacement)
    return str(what, ": ", v.size(), " entries, at most ", kMaxPlacement);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < min || v[i] > max)
      return str(what, ": entry ", i + 1, " is ", v[i], ", must be between ", min, " and ", max);
  }
  return "";
}

bool fail(std::string* error, const std::string& why) {
  if (error) *error = why;
  return false;
}

std::nullopt_t none(std::string* error, const std::string& why) {
  fail(error, why);
  return std::nullopt;
}

void appendMac(std::string& frame, const Key& key) {
  const Sha256Digest mac = hmacSha256(keyView(key), frame);
  frame.append(reinterpret_cast<const char*>(mac.data()), mac.size());
}

std::string header(FrameKind kind, size_t payloadLength, int64_t timestampMs, const Nonce& nonce) {
  Writer w;
  w.bytes(std::string_view(kMagic, 4));
  w.u8(kVersion);
  w.u8(uint8_t(kind));
  w.u16(0);
  w.u32(uint32_t(payloadLength));
  w.u64(uint64_t(timestampMs));
  w.bytes(std::string_view(reinterpret_cast<const char*>(nonce.data()), nonce.size()));
  return std::move(w.out());
}

}  // namespace

bool Request::operator==(const Request& o) const {
  return command == o.command && processes == o.processes && placement == o.placement &&
         hosts == o.hosts && removeRanks == o.removeRanks && checkpoint == o.checkpoint &&
         atStep == o.atStep;
}

const char* commandName(Command c) {
  switch (c) {
    case Command::Status:
      return "status";
    case Command::Rescale:
      return "rescale";
    case Command::Placement:
      return "placement";
    case Command::Checkpoint:
      return "checkpoint";
    case Command::Stop:
      return "stop";
  }
  return "unknown";
}

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::Done:
      return "done";
    case Outcome::Refused:
      return "refused";
    case Outcome::Moved:
      return "moved";
    case Outcome::Failed:
      return "failed";
  }
  return "unknown";
}

const char* rejectionText(Rejection r) {
  switch (r) {
    case Rejection::Unauthenticated:
      return "not authenticated (wrong key, or a changed frame)";
    case Rejection::Stale:
      return "timestamp outside the allowed clock skew";
    case Rejection::Replayed:
      return "replayed (nonce seen before)";
    case Rejection::Malformed:
      return "malformed frame";
    case Rejection::Busy:
      return "too many connections";
  }
  return "unknown reason";
}

std::string describe(const Request& r) {
  std::string s = commandName(r.command);
  if (r.command == Command::Placement) s += " " + joinInts(r.placement);
  else {
  if (r.processes > 0) s += " --processes " + std::to_string(r.processes);
  if (!r.removeRanks.empty()) s += " --remove-ranks " + joinInts(r.removeRanks);
  if (!r.placement.empty()) s += " --placement " + joinInts(r.placement);
  if (!r.hosts.empty()) {
    s += " --hosts ";
    for (size_t i = 0; i < r.hosts.size(); ++i)
      s += (i ? "," : "") + r.hosts[i].host + ":" + std::to_string(r.hosts[i].count);
  }
  if (r.checkpoint) s += " --checkpoint";
  }
  if (r.atStep > 0) s += " --at-step " + std::to_string(r.atStep);
  return s;
}

std::string checkRequest(const Request& r) {
  const bool rescale = r.command == Command::Rescale;
  const bool placement = r.command == Command::Placement;
  switch (r.command) {
    case Command::Status:
    case Command::Rescale:
    case Command::Placement:
    case Command::Checkpoint:
    case Command::Stop:
      break;
    default:
      return str("command: unknown command ", int(r.command));
  }
  const std::string name = commandName(r.command);
  if (!rescale && r.processes != 0) return name + ": takes no process count";
  if (!rescale && !placement && !r.placement.empty()) return name + ": takes no placement";
  if (!rescale && !r.hosts.empty()) return name + ": takes no hosts";
  if (!rescale && !r.removeRanks.empty()) return name + ": takes no ranks to remove";
  if (r.command != Command::Stop && r.checkpoint) return name + ": takes no --checkpoint";
  if (r.command == Command::Status && r.atStep != 0) return name + ": takes no --at-step";
  if (r.atStep < 0 || r.atStep > kMaxAtStep)
    return str("at-step: must be between 0 and ", kMaxAtStep, ", got ", r.atStep);
  if (r.processes < 0 || r.processes > kMaxProcesses)
    return str("processes: must be between 1 and ", kMaxProcesses, ", got ", r.processes);
  if (auto why = checkInts(r.placement, "placement", 1, kMaxProcesses); !why.empty()) return why;
  if (auto why = checkInts(r.removeRanks, "remove-ranks", 0, kMaxProcesses - 1); !why.empty())
    return why;
  if (std::set<int>(r.removeRanks.begin(), r.removeRanks.end()).size() != r.removeRanks.size())
    return "remove-ranks: a rank is named twice";
  if (r.hosts.size() > kMaxHosts) return str("hosts: ", r.hosts.size(), ", at most ", kMaxHosts);
  for (const HostSlots& h : r.hosts) {
    if (!validHostName(h.host))
      return str("hosts: '", h.host, "' is not a host name (1-", kMaxHostName,
                 " characters of A-Z a-z 0-9 . - _)");
    if (h.count < 1 || h.count > kMaxProcesses)
      return str("hosts: ", h.host, ":", h.count, ", the count must be between 1 and ",
                 kMaxProcesses);
  }
  if (placement && r.placement.empty()) return "placement: needs at least one entry";
  if (rescale && r.processes == 0 && r.removeRanks.empty())
    return "rescale: needs a process count or ranks to remove";
  if (rescale && r.processes > 0 && !r.placement.empty() &&
      r.placement.size() != size_t(r.processes))
    return str("placement: ", r.placement.size(), " entries for ", r.processes, " processes");
  return "";
}

size_t FrameHeader::frameSize() const {
  return kHeaderSize + payloadLength + (kind == FrameKind::Rejection ? 0 : kMacSize);
}

std::optional<FrameHeader> parseHeader(std::string_view bytes, std::string* error) {
  TL_CHECK(bytes.size() >= kHeaderSize);
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) return none(error, "bad magic");
  Reader in(bytes.substr(4, kHeaderSize - 4));
  uint8_t version = 0, kind = 0;
  uint16_t reserved = 0;
  uint64_t timestamp = 0;
  FrameHeader h;
  std::string nonce;
  in.u8(&version);
  in.u8(&kind);
  in.u16(&reserved);
  in.u32(&h.payloadLength);
  in.u64(&timestamp);
  in.bytes(kNonceSize, &nonce);
  if (version != kVersion)
    return none(error, str("version ", int(version), ", this tl speaks ", int(kVersion)));
  if (reserved != 0) return none(error, "reserved bytes are not zero");
  size_t limit = 0;
  switch (FrameKind(kind)) {
    case FrameKind::Request:
      limit = kMaxRequestPayload;
      break;
    case FrameKind::Reply:
      limit = kMaxReplyPayload;
      break;
    case FrameKind::Rejection:
      limit = 1;
      break;
    default:
      return none(error, str("unknown frame kind ", int(kind)));
  }
  h.kind = FrameKind(kind);
  if (h.payloadLength > limit)
    return none(error, str("payload of ", h.payloadLength, " bytes, at most ", limit));
  if (h.kind == FrameKind::Rejection && h.payloadLength != 1)
    return none(error, "rejection without a reason");
  h.timestampMs = int64_t(timestamp);
  std::memcpy(h.nonce.data(), nonce.data(), kNonceSize);
  return h;
}

std::string encodeRequest(const Request& r, const Key& key, int64_t timestampMs,
                          const Nonce& nonce) {
  const std::string why = checkRequest(r);
  TL_REQUIRE(why.empty(), why);
  Writer p;
  p.u8(uint8_t(r.command));
  p.u8(r.checkpoint ? 1 : 0);
  p.u32(uint32_t(r.processes));
  p.u64(uint64_t(r.atStep));
  p.u16(uint16_t(r.placement.size()));
  for (int x : r.placement) p.u32(uint32_t(x));
  p.u16(uint16_t(r.removeRanks.size()));
  for (int x : r.removeRanks) p.u32(uint32_t(x));
  p.u8(uint8_t(r.hosts.size()));
  for (const HostSlots& h : r.hosts) {
    p.u8(uint8_t(h.host.size()));
    p.bytes(h.host);
    p.u32(uint32_t(h.count));
  }
  TL_CHECK_LE(p.out().size(), kMaxRequestPayload);
  return encodeFrame(FrameKind::Request, p.out(), key, timestampMs, nonce);
}

std::string encodeReply(const Reply& r, const Key& key, int64_t timestampMs, const Nonce& nonce) {
  TL_CHECK_LE(r.message.size(), kMaxMessage);
  TL_CHECK_LE(r.body.size(), kMaxBody);
  Writer p;
  p.u8(uint8_t(r.outcome));
  p.u16(uint16_t(r.message.size()));
  p.bytes(r.message);
  p.u32(uint32_t(r.body.size()));
  p.bytes(r.body);
  return encodeFrame(FrameKind::Reply, p.out(), key, timestampMs, nonce);
}

std::string encodeFrame(FrameKind kind, std::string_view payload, const Key& key,
                        int64_t timestampMs, const Nonce& nonce) {
  std::string frame = header(kind, payload.size(), timestampMs, nonce);
  frame.append(payload.data(), payload.size());
  appendMac(frame, key);
  return frame;
}

std::string encodeRejection(Rejection why) {
  std::string frame = header(FrameKind::Rejection, 1, 0, Nonce{});
  frame.push_back(char(why));
  return frame;
}

bool macMatches(std::string_view frame, const Key& key) {
  if (frame.size() < kHeaderSize + kMacSize) return false;
  const std::string_view signed_ = frame.substr(0, frame.size() - kMacSize);
  const Sha256Digest mac = hmacSha256(keyView(key), signed_);
  return constantTimeEqual(mac.data(), mac.size(), frame.data() + signed_.size(), kMacSize);
}

std::optional<Request> decodeRequestPayload(std::string_view payload, std::string* error) {
  Reader in(payload);
  Request r;
  uint8_t command = 0, flags = 0;
  uint32_t processes = 0;
  uint64_t atStep = 0;
  if (!in.u8(&command) || !in.u8(&flags) || !in.u32(&processes) || !in.u64(&atStep))
    return none(error, "request cut short in its fixed fields");
  if (command < uint8_t(Command::Status) || command > uint8_t(Command::Stop))
    return none(error, str("unknown command ", int(command)));
  if (flags > 1) return none(error, str("unknown flags ", int(flags)));
  if (processes > uint32_t(kMaxProcesses))
    return none(error, str("processes: ", processes, ", at most ", kMaxProcesses));
  r.command = Command(command);
  r.checkpoint = flags == 1;
  r.processes = int(processes);
  if (atStep > uint64_t(kMaxAtStep)) return none(error, str("at-step: ", atStep, ", at most ", kMaxAtStep));
  r.atStep = int64_t(atStep);
  auto readInts = [&](std::vector<int>* out, const char* what) {
    uint16_t n = 0;
    if (!in.u16(&n)) return fail(error, str(what, ": cut short"));
    if (n > kMaxPlacement)
      return fail(error, str(what, ": ", n, " entries, at most ", kMaxPlacement));
    for (uint16_t i = 0; i < n; ++i) {
      uint32_t x = 0;
      if (!in.u32(&x)) return fail(error, str(what, ": cut short"));
      if (x > uint32_t(kMaxProcesses))
        return fail(error, str(what, ": entry ", i + 1, " is ", x, ", at most ", kMaxProcesses));
      out->push_back(int(x));
    }
    return true;
  };
  if (!readInts(&r.placement, "placement") || !readInts(&r.removeRanks, "remove-ranks"))
    return std::nullopt;
  uint8_t hosts = 0;
  if (!in.u8(&hosts)) return none(error, "hosts: cut short");
  if (hosts > kMaxHosts) return none(error, str("hosts: ", int(hosts), ", at most ", kMaxHosts));
  for (uint8_t i = 0; i < hosts; ++i) {
    uint8_t length = 0;
    uint32_t count = 0;
    HostSlots h;
    if (!in.u8(&length) || !in.bytes(length, &h.host) || !in.u32(&count))
      return none(error, "hosts: cut short");
    if (count > uint32_t(kMaxProcesses))
      return none(error, str("hosts: count ", count, ", at most ", kMaxProcesses));
    h.count = int(count);
    r.hosts.push_back(std::move(h));
  }
  if (!in.done()) return none(error, "trailing bytes after the request");
  if (auto why = checkRequest(r); !why.empty()) return none(error, why);
  return r;
}

std::optional<Reply> decodeReplyPayload(std::string_view payload, std::string* error) {
  Reader in(payload);
  Reply r;
  uint8_t outcome = 0;
  uint16_t messageLength = 0;
  uint32_t bodyLength = 0;
  if (!in.u8(&outcome) || !in.u16(&messageLength)) return none(error, "reply cut short");
  if (outcome > uint8_t(Outcome::Failed)) return none(error, str("unknown outcome ", int(outcome)));
  if (messageLength > kMaxMessage) return none(error, "reply message too long");
  if (!in.bytes(messageLength, &r.message) || !in.u32(&bodyLength))
    return none(error, "reply cut short");
  if (bodyLength > kMaxBody) return none(error, "reply body too long");
  if (!in.bytes(bodyLength, &r.body)) return none(error, "reply cut short");
  if (!in.done()) return none(error, "trailing bytes after the reply");
  r.outcome = Outcome(outcome);
  return r;
}

std::optional<DecodedRequest> decodeRequestFrame(std::string_view frame, const Key& key,
                                                 std::string* error, bool* authentic) {
  if (authentic) *authentic = false;
  if (frame.size() < kHeaderSize) return none(error, "frame cut short");
  auto h = parseHeader(frame, error);
  if (!h) return std::nullopt;
  if (h->kind != FrameKind::Request) return none(error, "not a request");
  if (frame.size() != h->frameSize())
    return none(error, str("frame of ", frame.size(), " bytes, its header says ", h->frameSize()));
  if (!macMatches(frame, key)) return none(error, "MAC does not match");
  if (authentic) *authentic = true;
  auto r = decodeRequestPayload(frame.substr(kHeaderSize, h->payloadLength), error);
  if (!r) return std::nullopt;
  return DecodedRequest{*h, std::move(*r)};
}

int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

Nonce randomNonce() {
  Nonce n;
  TL_CHECK(RAND_bytes(n.data(), int(n.size())) == 1, "RAND_bytes failed");
  return n;
}

}  // namespace tl::control
