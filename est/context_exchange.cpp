#include "est/byte_record.h"
#include "est/context_exchange.h"

#include <ATen/ATen.h>

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
    comm::Communicator& comm, const std::vector<std::pair<std::string, at::Tensor>>& mine, int root) {
  // The root writes one record per tensor (name, dtype, shape, bytes) straight into the buffer
  // it broadcasts: a layout change moves the whole replica, so copies count.
  std::vector<uint8_t> headers;  // the records without their tensor bytes, in order
  std::vector<at::Tensor> contiguous;
  int64_t total = 0;
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
      total += int64_t(t.numel() * t.element_size());
      contiguous.push_back(std::move(t));
    }
    total += int64_t(headers.size());
  }
  at::Tensor length = at::full({1}, total, at::kLong);
  comm.broadcast(length, root);
  at::Tensor buffer = at::empty({length.item<int64_t>()}, at::kByte);
  if (comm.rank() == root) {
    uint8_t* out = buffer.data_ptr<uint8_t>();
    const uint8_t* h = headers.data();
    auto copyHeader = [&](size_t n) {
      std::memcpy(out, h, n);
      out += n;
      h += n;
    };
    copyHeader(8);
    for (size_t i = 0; i < contiguous.size(); ++i) {
      const at::Tensor& t = contiguous[i];
      copyHeader(8 + mine[i].first.size() + 8 + 8 + 8 * size_t(t.dim()) + 8);
      const size_t n = t.numel() * t.element_size();
      std::memcpy(out, t.data_ptr(), n);
      out += n;
    }
  }
  comm.broadcast(buffer, root);

  std::vector<std::pair<std::string, at::Tensor>> out;
  const uint8_t* p = buffer.data_ptr<uint8_t>();
  const uint8_t* end = p + buffer.numel();
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
    at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(dtype));
    TL_CHECK(n == int64_t(t.numel() * t.element_size()) && end - p >= n, "named tensor '", name, "' truncated");
    std::memcpy(t.data_ptr(), p, size_t(n));
    p += n;
    out.emplace_back(std::move(name), std::move(t));
  }
  return out;
}

}  // namespace tl::est
