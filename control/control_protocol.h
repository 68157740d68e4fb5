// The control channel's messages and their frames (docs/design/control-channel.md).
//
// A frame is a fixed header, a payload of fixed fields and length-prefixed lists, and an
// HMAC-SHA-256 over everything before it under the job's control key:
//
//   offset  size  field
//        0     4  magic "TLCT"
//        4     1  version (1)
//        5     1  kind: 1 request, 2 reply, 3 rejection (unauthenticated, see below)
//        6     2  reserved, 0
//        8     4  payload length L, big-endian (request <= kMaxRequestPayload, reply <=
//                 kMaxReplyPayload, rejection == 1)
//       12     8  timestamp: milliseconds since the Unix epoch, big-endian two's complement
//       20    16  nonce: random per request; a reply echoes its request's
//       36     L  payload
//     36+L    32  HMAC-SHA-256(key, bytes [0, 36+L)); absent in a rejection
//
// A rejection is what the server sends, without a MAC, to a peer whose request it will not
// read: wrong key, stale, replayed, malformed, too many connections. It names a reason code
// only, so that `tl-ctl` can say "wrong key" instead of "connection closed"; a client never
// takes it for an answer.
//
// No generic deserialisation: every field has a fixed width or a capped length prefix, a
// payload must be consumed exactly, and anything else is an error naming the field.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_slots.h"

namespace tl::control {

enum class Command : uint8_t { Status = 1, Rescale = 2, Placement = 3, Checkpoint = 4, Stop = 5 };

// A host and how many new processes start on it (common/host_slots.h: one host list for tl).
using tl::HostSlots;

struct Request {
  Command command = Command::Status;
  int processes = 0;             // Rescale: new process count (0: derived from removeRanks)
  std::vector<int> placement;    // Rescale/Placement: ESTs per process (empty: even)
  std::vector<HostSlots> hosts;  // Rescale: where new processes start
  std::vector<int> removeRanks;  // Rescale: ranks that leave
  bool checkpoint = false;       // Stop: write a checkpoint first
  int64_t atStep = 0;            // not Status: apply at the boundary after this step (0: the next one)
  bool operator==(const Request& o) const;
};

// "rescale --processes 3 --placement 2,1,1", as tl-ctl would be given it: for logs.
std::string describe(const Request& r);
const char* commandName(Command c);

enum class Outcome : uint8_t { Done = 0, Refused = 1, Moved = 2, Failed = 3 };
const char* outcomeName(Outcome o);

struct Reply {
  Outcome outcome = Outcome::Done;
  std::string message;  // one line for the user: what happened, or why not
  std::string body;     // status: JSON text
};

// Why a server would not read a request; sent in a rejection frame.
enum class Rejection : uint8_t {
  Unauthenticated = 1,  // the MAC does not match: wrong key, or the frame was changed
  Stale = 2,            // timestamp outside the allowed clock skew
  Replayed = 3,         // nonce seen before within the window
  Malformed = 4,        // bad magic, version, kind, length, or a frame cut short
  Busy = 5,             // too many connections
};
const char* rejectionText(Rejection r);

// Limits. Requests are small; a reply carries at most a status document.
constexpr size_t kHeaderSize = 36;
constexpr size_t kMacSize = 32;
constexpr size_t kNonceSize = 16;
constexpr size_t kMaxPlacement = 1024;  // entries of placement and of removeRanks
constexpr size_t kMaxHosts = 64;
constexpr size_t kMaxHostName = kMaxHostNameBytes;
constexpr int kMaxProcesses = 65536;  // processes, a placement entry, a rank, a host count
// Room for the largest request the caps allow (24,843 bytes of payload: two full lists and 64
// hosts of 255 characters), so every request that checkRequest() accepts can be sent.
constexpr int64_t kMaxAtStep = int64_t(1) << 53;
constexpr size_t kMaxRequestFrame = 32 * 1024;
constexpr size_t kMaxRequestPayload = kMaxRequestFrame - kHeaderSize - kMacSize;
static_assert(14 + 2 * (2 + 4 * kMaxPlacement) + 1 + kMaxHosts * (1 + kMaxHostName + 4) <=
              kMaxRequestPayload);
constexpr size_t kMaxMessage = 4096;    // Reply::message
constexpr size_t kMaxBody = 64 * 1024;  // Reply::body
constexpr size_t kMaxReplyPayload = 1 + 2 + kMaxMessage + 4 + kMaxBody;
constexpr uint8_t kVersion = 1;

enum class FrameKind : uint8_t { Request = 1, Reply = 2, Rejection = 3 };

using Nonce = std::array<uint8_t, kNonceSize>;
using Key = std::vector<uint8_t>;

// The fixed header, parsed from its 36 bytes.
struct FrameHeader {
  FrameKind kind = FrameKind::Request;
  uint32_t payloadLength = 0;
  int64_t timestampMs = 0;
  Nonce nonce{};
  // Bytes of the whole frame: header, payload and (except for rejections) MAC.
  size_t frameSize() const;
};

// Parses a header: nullopt with `error` set when the magic, version, kind, reserved bytes or
// length (against the kind's limit) are wrong. `bytes` must hold at least kHeaderSize bytes.
std::optional<FrameHeader> parseHeader(std::string_view bytes, std::string* error);

// Whether `name` may be a host: 1..255 bytes of [A-Za-z0-9._-].
using tl::validHostName;

// Empty when `r` fits the protocol (limits, and only the fields its command uses), else why
// not: "placement: entry 2 is 0, must be at least 1".
std::string checkRequest(const Request& r);

// Whole frames. Encoding checks the request (InputError with checkRequest's reason).
std::string encodeRequest(const Request& r, const Key& key, int64_t timestampMs,
                          const Nonce& nonce);
std::string encodeReply(const Reply& r, const Key& key, int64_t timestampMs, const Nonce& nonce);
std::string encodeRejection(Rejection why);
// A request or reply frame around any payload (encodeRequest/encodeReply use it; tests build
// frames the encoders would refuse with it).
std::string encodeFrame(FrameKind kind, std::string_view payload, const Key& key,
                        int64_t timestampMs, const Nonce& nonce);

// Checks a complete frame's MAC (constant time). `frame` must be header.frameSize() bytes.
bool macMatches(std::string_view frame, const Key& key);

// Decodes the payload of an authenticated frame; nullopt with `error` naming the field.
std::optional<Request> decodeRequestPayload(std::string_view payload, std::string* error);
std::optional<Reply> decodeReplyPayload(std::string_view payload, std::string* error);

// Everything a receiver does with a complete request frame except freshness and replay, which
// need the clock and the server's memory of nonces: header, MAC, payload.
struct DecodedRequest {
  FrameHeader header;
  Request request;
};
std::optional<DecodedRequest> decodeRequestFrame(std::string_view frame, const Key& key,
                                                 std::string* error, bool* authentic = nullptr);

// Milliseconds since the Unix epoch, now.
int64_t nowMs();
// A random nonce (OpenSSL's RAND_bytes).
Nonce randomNonce();

}  // namespace tl::control
