// The control channel's frames: round trips of every command, the limits, and a seeded
// mutation fuzzer that must never crash nor accept a changed frame.
#include <gtest/gtest.h>

#include <random>

#include "common/check.h"
#include "control/control_protocol.h"

namespace tl::control {
namespace {

const Key kKey(32, 7);
const Key kOtherKey(32, 8);
const Nonce kNonce = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

std::vector<Request> sampleRequests() {
  std::vector<Request> out;
  out.push_back(Request{});
  Request grow;
  grow.command = Command::Rescale;
  grow.processes = 3;
  grow.placement = {2, 1, 1};
  grow.hosts = {{"nodeB", 1}, {"node-c.example_1", 2}};
  out.push_back(grow);
  Request shrink;
  shrink.command = Command::Rescale;
  shrink.removeRanks = {2, 3};
  out.push_back(shrink);
  Request move;
  move.command = Command::Placement;
  move.placement = {3, 1};
  move.atStep = 9007199254740992;  // the largest at-step, 2^53
  out.push_back(move);
  Request checkpoint;
  checkpoint.command = Command::Checkpoint;
  out.push_back(checkpoint);
  Request stop;
  stop.command = Command::Stop;
  stop.checkpoint = true;
  out.push_back(stop);
  return out;
}

std::optional<Request> decode(const std::string& frame, const Key& key = kKey) {
  std::string error;
  auto d = decodeRequestFrame(frame, key, &error);
  if (!d) return std::nullopt;
  return d->request;
}

std::string payloadOf(const std::string& frame) {
  return frame.substr(kHeaderSize, frame.size() - kHeaderSize - kMacSize);
}

TEST(ControlProtocol, EveryCommandRoundTrips) {
  for (const Request& r : sampleRequests()) {
    const std::string frame = encodeRequest(r, kKey, 1234567, kNonce);
    std::string error;
    auto d = decodeRequestFrame(frame, kKey, &error);
    ASSERT_TRUE(d) << describe(r) << ": " << error;
    EXPECT_EQ(d->request, r) << describe(r);
    EXPECT_EQ(d->header.timestampMs, 1234567);
    EXPECT_EQ(d->header.nonce, kNonce);
    EXPECT_EQ(frame.size(), d->header.frameSize());
  }
}

TEST(ControlProtocol, Describe) {
  auto r = sampleRequests();
  EXPECT_EQ(describe(r[0]), "status");
  EXPECT_EQ(describe(r[1]),
            "rescale --processes 3 --placement 2,1,1 --hosts nodeB:1,node-c.example_1:2");
  EXPECT_EQ(describe(r[2]), "rescale --remove-ranks 2,3");
  EXPECT_EQ(describe(r[3]), "placement 3,1 --at-step 9007199254740992");
  EXPECT_EQ(describe(r[5]), "stop --checkpoint");
}

TEST(ControlProtocol, RepliesRoundTrip) {
  for (Outcome o : {Outcome::Done, Outcome::Refused, Outcome::Moved, Outcome::Failed}) {
    Reply r{o, "rescaled to 3 processes", std::string(kMaxBody, 'x')};
    const std::string frame = encodeReply(r, kKey, 5, kNonce);
    std::string error;
    auto h = parseHeader(frame, &error);
    ASSERT_TRUE(h) << error;
    EXPECT_EQ(h->kind, FrameKind::Reply);
    EXPECT_TRUE(macMatches(frame, kKey));
    EXPECT_FALSE(macMatches(frame, kOtherKey));
    auto back = decodeReplyPayload(frame.substr(kHeaderSize, h->payloadLength), &error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(back->outcome, o);
    EXPECT_EQ(back->message, r.message);
    EXPECT_EQ(back->body, r.body);
  }
}

TEST(ControlProtocol, ReplyIsNotARequest) {
  // A reply frame carries the request's nonce and a valid MAC; sent back to the server it must
  // not pass for a request.
  const std::string reply = encodeReply({Outcome::Done, "ok", ""}, kKey, nowMs(), kNonce);
  std::string error;
  EXPECT_FALSE(decodeRequestFrame(reply, kKey, &error));
  EXPECT_EQ(error, "not a request");
}

TEST(ControlProtocol, EncoderEnforcesTheLimits) {
  auto refused = [](const Request& r, const std::string& words) {
    try {
      encodeRequest(r, kKey, 0, kNonce);
      ADD_FAILURE() << describe(r) << " was encoded";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  Request r;
  r.command = Command::Placement;
  refused(r, "needs at least one entry");
  r.placement.assign(kMaxPlacement + 1, 1);
  refused(r, "at most 1024");
  r.placement = {2, 0};
  refused(r, "entry 2 is 0");
  r = Request{};
  r.command = Command::Rescale;
  refused(r, "needs a process count or ranks to remove");
  r.processes = kMaxProcesses + 1;
  refused(r, "processes");
  r.processes = 2;
  r.placement = {1, 1, 1};
  refused(r, "3 entries for 2 processes");
  r.placement.clear();
  r.hosts = {{"bad host", 1}};
  refused(r, "is not a host name");
  r.hosts = {{std::string(256, 'a'), 1}};
  refused(r, "is not a host name");
  r.hosts = {{"ok", 0}};
  refused(r, "count must be between");
  r.hosts.assign(kMaxHosts + 1, HostSlots{"h", 1});
  refused(r, "at most 64");
  r.hosts.clear();
  r.removeRanks = {1, 1};
  refused(r, "named twice");
  r = Request{};
  r.checkpoint = true;
  refused(r, "status: takes no --checkpoint");
  r = Request{};
  r.command = Command::Checkpoint;
  r.processes = 2;
  refused(r, "checkpoint: takes no process count");
  // The largest request fits a frame.
  r = Request{};
  r.command = Command::Placement;
  r.placement.assign(kMaxPlacement, kMaxProcesses);
  EXPECT_LE(encodeRequest(r, kKey, 0, kNonce).size(), kMaxRequestFrame);
  r = Request{};
  r.command = Command::Rescale;
  r.processes = 1;
  r.hosts.assign(kMaxHosts, HostSlots{std::string(kMaxHostName, 'h'), 1});
  r.placement.assign(1, 1);
  r.removeRanks.resize(kMaxPlacement);
  for (size_t i = 0; i < kMaxPlacement; ++i) r.removeRanks[i] = int(i);
  EXPECT_LE(encodeRequest(r, kKey, 0, kNonce).size(), kMaxRequestFrame);
}

TEST(ControlProtocol, DecoderEnforcesTheLimits) {
  auto rejected = [](const std::string& payload, const std::string& words) {
    const std::string frame = encodeFrame(FrameKind::Request, payload, kKey, 0, kNonce);
    std::string error;
    EXPECT_FALSE(decodeRequestFrame(frame, kKey, &error)) << words;
    EXPECT_NE(error.find(words), std::string::npos) << error;
  };
  // command, flags, processes, at-step, placement count, remove count, host count; `v` puts the
  // eight at-step bytes after the first six.
  auto v = [](std::string s) {
    if (s.size() >= 6) s.insert(6, std::string(8, '\0'));
    return s;
  };
  const std::string status = v(std::string("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 11));
  std::string error;
  ASSERT_TRUE(
      decodeRequestFrame(encodeFrame(FrameKind::Request, status, kKey, 0, kNonce), kKey, &error))
      << error;
  rejected(std::string("\x09", 1) + status.substr(1), "unknown command 9");
  rejected(status.substr(0, 1) + std::string("\x02", 1) + status.substr(2), "unknown flags");
  rejected(status + "x", "trailing bytes");
  rejected(status.substr(0, 10), "cut short in its fixed fields");
  rejected(status.substr(0, 15), "placement: cut short");
  rejected(status.substr(0, 17), "remove-ranks: cut short");
  rejected(v(std::string("\x03\x00\x00\x00\x00\x00\x04\x01", 8)), "1025 entries");
  rejected(v(std::string("\x03\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x01", 12)), "cut short");
  rejected(v(std::string("\x02\x00\x00\x00\x00\x01\x00\x00\x00\x00\x41", 11)), "hosts: 65");
  rejected(v(std::string("\x02\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x02"
                         "a!\x00\x00\x00\x01",
                         18)),
           "not a host name");
  rejected(v(std::string("\x02\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00", 11)), "processes: 131072");
  std::string farStep = status;
  farStep[0] = 4;     // checkpoint
  farStep[6] = 0x7f;  // at-step 2^62 and more
  rejected(farStep, "at-step: ");
  std::string statusAtStep = status;
  statusAtStep[13] = 5;
  rejected(statusAtStep, "status: takes no --at-step");
}

TEST(ControlProtocol, HeaderChecks) {
  const std::string good = encodeRequest(Request{}, kKey, 0, kNonce);
  auto headerError = [&](std::string frame) {
    std::string error;
    EXPECT_FALSE(parseHeader(frame, &error));
    return error;
  };
  std::string f = good;
  f[0] = 'X';
  EXPECT_EQ(headerError(f), "bad magic");
  f = good;
  f[4] = 2;
  EXPECT_EQ(headerError(f), "version 2, this tl speaks 1");
  f = good;
  f[5] = 9;
  EXPECT_EQ(headerError(f), "unknown frame kind 9");
  f = good;
  f[8] = 0x7f;  // a 2 GiB payload
  EXPECT_NE(headerError(f).find(str("at most ", kMaxRequestPayload)), std::string::npos);
  f = good;
  f[7] = 1;
  EXPECT_EQ(headerError(f), "reserved bytes are not zero");
  EXPECT_FALSE(decode(good, kOtherKey));
  EXPECT_TRUE(decode(good));
}

// Thousands of seeded mutations of valid frames: flipped bits, changed bytes, truncations,
// extensions, spliced pieces. A changed frame must never decode; the payload parser, fed the
// mutants without authentication, must never crash and accept only payloads it would encode
// the same way.
TEST(ControlProtocol, MutatedFramesAreNeverAccepted) {
  std::mt19937_64 rng(20240917);
  std::vector<std::string> frames;
  for (const Request& r : sampleRequests())
    frames.push_back(encodeRequest(r, kKey, 1700000000000, randomNonce()));
  auto pick = [&](size_t n) { return size_t(rng() % std::max<size_t>(n, 1)); };
  int accepted = 0, parsedWithoutMac = 0;
  const int kIterations = 20000;
  for (int i = 0; i < kIterations; ++i) {
    const std::string& base = frames[pick(frames.size())];
    std::string m = base;
    switch (rng() % 6) {
      case 0:  // flip 1-4 bits
        for (int k = 1 + int(rng() % 4); k > 0; --k) m[pick(m.size())] ^= char(1 << (rng() % 8));
        break;
      case 1:  // set a byte
        m[pick(m.size())] = char(rng());
        break;
      case 2:  // truncate
        m.resize(pick(m.size()));
        break;
      case 3:  // extend
        for (int k = 1 + int(rng() % 40); k > 0; --k) m.push_back(char(rng()));
        break;
      case 4: {  // splice a piece of another frame in
        const std::string& other = frames[pick(frames.size())];
        const size_t at = pick(m.size()), from = pick(other.size());
        m.replace(at, pick(40), other.substr(from, pick(40)));
        break;
      }
      default:  // change a length-like byte in the payload
        m[kHeaderSize + pick(m.size() - kHeaderSize - kMacSize)] =
            char(rng() % 4 ? rng() % 3 : 0xff);
    }
    if (m == base) continue;
    std::string error;
    if (decodeRequestFrame(m, kKey, &error)) ++accepted;
    if (m.size() >= kHeaderSize) {
      (void)parseHeader(m, &error);
      const std::string payload = m.substr(kHeaderSize);
      if (auto r = decodeRequestPayload(payload, &error)) {
        ++parsedWithoutMac;
        EXPECT_EQ(checkRequest(*r), "");
        EXPECT_EQ(payloadOf(encodeRequest(*r, kKey, 0, kNonce)), payload) << describe(*r);
      }
      (void)decodeReplyPayload(payload, &error);
    }
  }
  EXPECT_EQ(accepted, 0);
  // Sanity: the mutants reached deep into the parser (some valid requests among them).
  EXPECT_GT(parsedWithoutMac, 0);
}

}  // namespace
}  // namespace tl::control
