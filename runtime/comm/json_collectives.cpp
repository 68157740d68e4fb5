#include "runtime/comm/json_collectives.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "common/check.h"

namespace tl::comm {
namespace {

constexpr size_t kLengthBytes = 8;

size_t inlineWidth(const JsonCollectiveOptions& options) {
  TL_CHECK(options.inlineBytes > kLengthBytes, "JSON collectives: inlineBytes ", options.inlineBytes,
           " leaves no room after the 8-byte length");
  return options.inlineBytes;
}

// [length | the first bytes], zero-padded to `width`.
at::Tensor firstPart(const std::vector<uint8_t>& bytes, size_t width) {
  at::Tensor t = at::zeros({int64_t(width)}, at::kByte);
  auto* p = t.data_ptr<uint8_t>();
  const int64_t length = int64_t(bytes.size());
  std::memcpy(p, &length, kLengthBytes);
  std::memcpy(p + kLengthBytes, bytes.data(), std::min(bytes.size(), width - kLengthBytes));
  return t;
}

size_t lengthIn(const uint8_t* row) {
  int64_t length = 0;
  std::memcpy(&length, row, kLengthBytes);
  TL_CHECK(length >= 0, "JSON collectives: a member sent a negative length ", length);
  return size_t(length);
}

// The bytes past the inline part, zero-padded to `width`.
at::Tensor rest(const std::vector<uint8_t>& bytes, size_t inlinePayload, size_t width) {
  at::Tensor t = at::zeros({int64_t(width)}, at::kByte);
  if (bytes.size() > inlinePayload)
    std::memcpy(t.data_ptr<uint8_t>(), bytes.data() + inlinePayload, bytes.size() - inlinePayload);
  return t;
}

}  // namespace

std::vector<nlohmann::json> allgatherJson(Communicator& comm, const nlohmann::json& mine,
                                          const JsonCollectiveOptions& options) {
  const size_t width = inlineWidth(options);
  const size_t inlinePayload = width - kLengthBytes;
  const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(mine);
  const at::Tensor first = comm.allgather(firstPart(bytes, width), options.collective).contiguous();
  const auto* rows = first.data_ptr<uint8_t>();
  const int members = int(first.size(0));
  std::vector<size_t> lengths;
  size_t longest = 0;
  for (int r = 0; r < members; ++r) {
    lengths.push_back(lengthIn(rows + size_t(r) * width));
    longest = std::max(longest, lengths.back());
  }
  at::Tensor second;
  const size_t restWidth = longest > inlinePayload ? longest - inlinePayload : 0;
  if (restWidth > 0) second = comm.allgather(rest(bytes, inlinePayload, restWidth), options.collective).contiguous();
  std::vector<nlohmann::json> out;
  out.reserve(size_t(members));
  for (int r = 0; r < members; ++r) {
    const uint8_t* row = rows + size_t(r) * width + kLengthBytes;
    std::vector<uint8_t> theirs(row, row + std::min(lengths[size_t(r)], inlinePayload));
    if (lengths[size_t(r)] > inlinePayload) {
      const uint8_t* more = second.data_ptr<uint8_t>() + size_t(r) * restWidth;
      theirs.insert(theirs.end(), more, more + (lengths[size_t(r)] - inlinePayload));
    }
    out.push_back(nlohmann::json::from_cbor(theirs));
  }
  return out;
}

nlohmann::json broadcastJson(Communicator& comm, const nlohmann::json& value, int root,
                             const JsonCollectiveOptions& options) {
  const size_t width = inlineWidth(options);
  const size_t inlinePayload = width - kLengthBytes;
  const bool sender = comm.rank() == root;
  const std::vector<uint8_t> bytes = sender ? nlohmann::json::to_cbor(value) : std::vector<uint8_t>();
  at::Tensor first = firstPart(bytes, width);
  comm.broadcast(first, root, options.collective);
  const auto* p = first.data_ptr<uint8_t>();
  const size_t length = lengthIn(p);
  std::vector<uint8_t> received(p + kLengthBytes, p + kLengthBytes + std::min(length, inlinePayload));
  if (length > inlinePayload) {
    at::Tensor more = rest(bytes, inlinePayload, length - inlinePayload);
    comm.broadcast(more, root, options.collective);
    const auto* m = more.data_ptr<uint8_t>();
    received.insert(received.end(), m, m + (length - inlinePayload));
  }
  // The root decodes its own bytes too: every member holds the same value afterwards.
  return nlohmann::json::from_cbor(sender ? bytes : received);
}

}  // namespace tl::comm
