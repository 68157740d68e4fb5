#include "est/byte_record.h"
#include "est/context_exchange.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

#include "common/check.h"

namespace tl::est {

std::vector<EstContext> gatherContexts(comm::Communicator& comm, const Placement& placement,
                                       const std::vector<EstContext>& local, int root) {
  // Fixed-size records, padded to the largest local count.
  std::vector<std::vector<uint8_t>> packed;
  size_t recordBytes = 0;
  for (const auto& c : local) {
    packed.push_back(packContext(c));
    recordBytes = std::max(recordBytes, packed.back().size());
  }
  at::Tensor sizes = at::full({1}, int64_t(recordBytes), at::kLong);
  comm.allreduce(sizes, comm::ReduceOp::Max);
  recordBytes = size_t(sizes.item<int64_t>());
  int maxLocal = 0;
  for (int r = 0; r < placement.processes(); ++r) maxLocal = std::max(maxLocal, placement.count(r));
  const int64_t stride = int64_t(recordBytes) + 8;
  at::Tensor mine = at::zeros({maxLocal * stride}, at::kByte);
  uint8_t* p = mine.data_ptr<uint8_t>();
  for (size_t i = 0; i < packed.size(); ++i) {
    int64_t len = int64_t(packed[i].size());
    std::memcpy(p + i * stride, &len, 8);
    std::memcpy(p + i * stride + 8, packed[i].data(), packed[i].size());
  }
  at::Tensor all = comm.allgather(mine);
  std::vector<EstContext> out;
  if (root >= 0 && comm.rank() != root) return out;
  out.resize(size_t(placement.logicalWorkers()));
  const uint8_t* a = all.data_ptr<uint8_t>();
  for (int r = 0; r < placement.processes(); ++r) {
    for (int i = 0; i < placement.count(r); ++i) {
      const uint8_t* rec = a + (int64_t(r) * maxLocal + i) * stride;
      int64_t len;
      std::memcpy(&len, rec, 8);
      EstContext c = unpackContext(rec + 8, size_t(len));
      TL_CHECK_EQ(c.logicalRank, placement.first(r) + i);
      out[size_t(c.logicalRank)] = std::move(c);
    }
  }
  return out;
}

namespace {

// The records of `part` without their bytes (count, then per tensor: name, dtype, shape, byte
// count), appended to `out`; its tensors, contiguous on the CPU (the live ones when they are
// contiguous CPU tensors already), appended to `tensors`.
void encodeRecords(const NamedTensors& part, std::vector<uint8_t>& out, std::vector<at::Tensor>& tensors) {
  appendInt(out, int64_t(part.size()));
  for (const auto& [name, tensor] : part) {
    at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    appendInt(out, int64_t(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    appendInt(out, int64_t(t.scalar_type()));
    appendInt(out, t.dim());
    for (int64_t s : t.sizes()) appendInt(out, s);
    appendInt(out, int64_t(t.nbytes()));
    tensors.push_back(std::move(t));
  }
}

// Reads one part's records at `p` (advanced past them): the part over tensors[next...], which
// `allocate` first appends (new tensors to receive into) and which a sender already holds.
NamedTensors decodeRecords(const uint8_t*& p, const uint8_t* end, std::vector<at::Tensor>& tensors, size_t& next,
                           bool allocate) {
  NamedTensors out;
  const int64_t count = readInt(p, end, "named tensor");
  for (int64_t i = 0; i < count; ++i) {
    const int64_t nameLen = readInt(p, end, "named tensor");
    TL_CHECK(nameLen >= 0 && end - p >= nameLen, "named tensor record truncated");
    std::string name(reinterpret_cast<const char*>(p), size_t(nameLen));
    p += nameLen;
    const auto dtype = at::ScalarType(readInt(p, end, "named tensor"));
    std::vector<int64_t> sizes(size_t(readInt(p, end, "named tensor")));
    for (auto& s : sizes) s = readInt(p, end, "named tensor");
    const int64_t n = readInt(p, end, "named tensor");
    if (allocate) tensors.push_back(at::empty(sizes, at::TensorOptions().dtype(dtype)));
    const at::Tensor& t = tensors.at(next++);
    TL_CHECK(n == int64_t(t.nbytes()), "named tensor '", name, "' truncated");
    out.emplace_back(std::move(name), t);
  }
  return out;
}

int64_t totalBytes(const std::vector<at::Tensor>& tensors) {
  int64_t total = 0;
  for (const at::Tensor& t : tensors) total += int64_t(t.nbytes());
  return total;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> broadcastNamedTensors(
    comm::Communicator& comm, const std::vector<std::pair<std::string, at::Tensor>>& mine, int root,
    int64_t chunkBytes) {
  TL_CHECK_GT(chunkBytes, 0);
  // The records without their bytes first (name, dtype, shape, byte count), in one broadcast.
  std::vector<uint8_t> headers;
  std::vector<at::Tensor> tensors;  // the root's, contiguous on the CPU; elsewhere, to receive into
  if (comm.rank() == root) encodeRecords(mine, headers, tensors);
  at::Tensor length = at::full({1}, int64_t(headers.size()), at::kLong);
  comm.broadcast(length, root);
  at::Tensor head = at::empty({length.item<int64_t>()}, at::kByte);
  if (comm.rank() == root) std::memcpy(head.data_ptr<uint8_t>(), headers.data(), headers.size());
  comm.broadcast(head, root);
  const uint8_t* p = head.data_ptr<uint8_t>();
  size_t next = 0;
  std::vector<std::pair<std::string, at::Tensor>> out =
      decodeRecords(p, p + head.numel(), tensors, next, comm.rank() != root);
  const int64_t total = totalBytes(tensors);

  // Then their bytes as one stream, `chunkBytes` at a time through one buffer that is reused:
  // no buffer of the whole replica to page in, and no copy of it on the root beforehand.
  at::Tensor chunk = at::empty({std::min(chunkBytes, std::max<int64_t>(total, 1))}, at::kByte);
  uint8_t* c = chunk.data_ptr<uint8_t>();
  size_t tensor = 0;
  int64_t offset = 0;  // within `tensor`
  auto stream = [&](int64_t n, bool fill) {
    int64_t done = 0;
    while (done < n) {
      const at::Tensor& t = tensors[tensor];
      const int64_t bytes = int64_t(t.numel() * t.element_size());
      const int64_t take = std::min(bytes - offset, n - done);
      uint8_t* data = static_cast<uint8_t*>(t.data_ptr()) + offset;
      if (fill) {
        std::memcpy(c + done, data, size_t(take));
      } else {
        std::memcpy(data, c + done, size_t(take));
      }
      done += take;
      offset += take;
      if (offset == bytes) {
        ++tensor;
        offset = 0;
      }
    }
  };
  auto skipEmpty = [&] {
    while (tensor < tensors.size() && tensors[tensor].numel() == 0) ++tensor;
  };
  for (int64_t sent = 0; sent < total;) {
    const int64_t n = std::min(chunkBytes, total - sent);
    at::Tensor piece = chunk.narrow(0, 0, n);
    skipEmpty();
    if (comm.rank() == root) stream(n, true);
    comm.broadcast(piece, root);
    if (comm.rank() != root) stream(n, false);
    sent += n;
  }
  return out;
}

namespace {

// Point-to-point tags of sendNamedTensorsFromSenders.
constexpr int kLengthTag = 0, kRecordsTag = 1, kBytesTag = 2;

// Pieces of the byte stream over `tensors` (in order): sender s of `senders` owns the s-th of
// as many even shares, cut at tensor ends and every `chunkBytes`. `visit(s, view)` gets each
// piece as a byte view of its tensor, in stream order.
void forEachPiece(const std::vector<at::Tensor>& tensors, int senders, int64_t chunkBytes,
                  const std::function<void(int, at::Tensor)>& visit) {
  const int64_t total = totalBytes(tensors);
  int64_t start = 0;  // of the current tensor within the stream
  for (const at::Tensor& t : tensors) {
    const int64_t bytes = int64_t(t.nbytes());
    if (bytes == 0) continue;
    const at::Tensor flat = t.view({-1}).view(at::kByte);
    for (int64_t done = 0; done < bytes;) {
      const int64_t position = start + done;
      // The share holding `position`, and where that share ends.
      int s = int(position * senders / total);
      while (total * (s + 1) / senders <= position) ++s;
      const int64_t shareEnd = total * (s + 1) / senders;
      const int64_t n = std::min({chunkBytes, bytes - done, shareEnd - position});
      visit(s, flat.narrow(0, done, n));
      done += n;
    }
    start += bytes;
  }
}

}  // namespace

std::vector<NamedTensors> sendNamedTensorsFromSenders(comm::Communicator& comm, const std::vector<NamedTensors>& parts,
                                                      const std::vector<int>& senders,
                                                      const std::vector<int>& receivers, int64_t chunkBytes) {
  TL_CHECK(comm.pointToPoint(), "sendNamedTensorsFromSenders: the ", comm.backend(),
           " communicator has no point-to-point");
  TL_CHECK_GT(chunkBytes, 0);
  TL_CHECK(!senders.empty(), "sendNamedTensorsFromSenders: no sender");
  const int me = comm.rank();
  const int sender = int(std::find(senders.begin(), senders.end(), me) - senders.begin());
  const bool sending = sender < int(senders.size());
  const bool receiving = std::find(receivers.begin(), receivers.end(), me) != receivers.end();
  TL_CHECK(sending != receiving, "sendNamedTensorsFromSenders: rank ", me, " must either send or receive");

  // The records (every part's) from the first sender to every receiver: their length, then them.
  std::vector<uint8_t> headers;
  std::vector<at::Tensor> tensors;  // a sender's, contiguous on the CPU; a receiver's, to receive into
  if (sending) {
    appendInt(headers, int64_t(parts.size()));
    for (const NamedTensors& part : parts) encodeRecords(part, headers, tensors);
  }
  std::vector<std::unique_ptr<comm::PendingCollective>> pending;
  at::Tensor length = at::full({1}, int64_t(headers.size()), at::kLong);
  at::Tensor head;
  if (sending) head = at::from_blob(headers.data(), {int64_t(headers.size())}, at::kByte);
  if (sender == 0) {
    for (int r : receivers) {
      pending.push_back(comm.startSend(length, r, kLengthTag));
      pending.push_back(comm.startSend(head, r, kRecordsTag));
    }
  } else if (receiving) {
    comm.startReceive(length, senders[0], kLengthTag)->wait();
    head = at::empty({length.item<int64_t>()}, at::kByte);
    comm.startReceive(head, senders[0], kRecordsTag)->wait();
  }
  const uint8_t* p = head.data_ptr<uint8_t>();
  const uint8_t* end = p + head.numel();
  std::vector<NamedTensors> out(size_t(readInt(p, end, "named tensors")));
  size_t next = 0;
  for (NamedTensors& part : out) part = decodeRecords(p, end, tensors, next, receiving);

  // The bytes: every piece straight from its sender's tensor into every receiver's, all started
  // at once, so that a receiver takes from every sender at the same time.
  forEachPiece(tensors, int(senders.size()), chunkBytes, [&](int s, at::Tensor piece) {
    if (s == sender) {
      for (int r : receivers) pending.push_back(comm.startSend(piece, r, kBytesTag));
    } else if (receiving) {
      pending.push_back(comm.startReceive(piece, senders[size_t(s)], kBytesTag));
    }
  });
  for (auto& handle : pending) handle->wait();
  return out;
}

}  // namespace tl::est
