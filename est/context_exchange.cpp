#include "est/byte_record.h"
#include "est/context_exchange.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

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

std::vector<std::pair<std::string, at::Tensor>> broadcastNamedTensors(
    comm::Communicator& comm, const std::vector<std::pair<std::string, at::Tensor>>& mine, int root,
    int64_t chunkBytes) {
  TL_CHECK_GT(chunkBytes, 0);
  // The records without their bytes first (name, dtype, shape, byte count), in one broadcast.
  std::vector<uint8_t> headers;
  std::vector<at::Tensor> tensors;  // the root's, contiguous on the CPU; elsewhere, to receive into
  if (comm.rank() == root) {
    appendInt(headers, int64_t(mine.size()));
    for (const auto& [name, tensor] : mine) {
      at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
      appendInt(headers, int64_t(name.size()));
      headers.insert(headers.end(), name.begin(), name.end());
      appendInt(headers, int64_t(t.scalar_type()));
      appendInt(headers, t.dim());
      for (int64_t s : t.sizes()) appendInt(headers, s);
      appendInt(headers, int64_t(t.numel() * t.element_size()));
      tensors.push_back(std::move(t));
    }
  }
  at::Tensor length = at::full({1}, int64_t(headers.size()), at::kLong);
  comm.broadcast(length, root);
  at::Tensor head = at::empty({length.item<int64_t>()}, at::kByte);
  if (comm.rank() == root) std::memcpy(head.data_ptr<uint8_t>(), headers.data(), headers.size());
  comm.broadcast(head, root);

  std::vector<std::pair<std::string, at::Tensor>> out;
  const uint8_t* p = head.data_ptr<uint8_t>();
  const uint8_t* end = p + head.numel();
  const int64_t count = readInt(p, end, "named tensor");
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t nameLen = readInt(p, end, "named tensor");
    TL_CHECK(nameLen >= 0 && end - p >= nameLen, "named tensor record truncated");
    std::string name(reinterpret_cast<const char*>(p), size_t(nameLen));
    p += nameLen;
    const auto dtype = at::ScalarType(readInt(p, end, "named tensor"));
    std::vector<int64_t> sizes(size_t(readInt(p, end, "named tensor")));
    for (auto& s : sizes) s = readInt(p, end, "named tensor");
    const int64_t n = readInt(p, end, "named tensor");
    if (comm.rank() != root) tensors.push_back(at::empty(sizes, at::TensorOptions().dtype(dtype)));
    const at::Tensor& t = tensors.at(size_t(i));
    TL_CHECK(n == int64_t(t.numel() * t.element_size()), "named tensor '", name, "' truncated");
    total += n;
    out.emplace_back(std::move(name), t);
  }

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

}  // namespace tl::est
