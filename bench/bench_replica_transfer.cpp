// The replica's transfer to members that join a grow (issue 43), mpirun -np 3 (the owner of
// EST 0 and two joiners, as in a grow 2 -> 4): ResNet-18's state dict and an SGD momentum buffer
// per parameter (one replica, ~89 MB), sent
//  - before: as before issue 43: the owner clones the replica, packs the clone into one buffer
//    of its size and broadcasts it; every joiner unpacks it into new tensors;
//  - after: broadcastNamedTensors (est/context_exchange.h): records first, then the bytes
//    straight from the live tensors in 2 MiB broadcasts (--chunk-mib) through one reused buffer;
//  - link: one broadcast of as many bytes from a buffer already paged in, into one already
//    paged in: what the communicator itself carries;
//  - senders: sendNamedTensorsFromSenders (est/context_exchange.h): every sender (ranks
//    0 .. --senders - 1, as the survivors of a grow) sends its share of the bytes point-to-point
//    to every joiner, straight from its tensors into theirs, in --p2p-mib pieces.
// before, after and link run over the owner (rank 0) and the joiners only; senders over all.
// Rounds interleave the methods (their order rotates), so load on a shared machine hits each
// alike; each figure is the median over the rounds of the slowest process's seconds.
//   mpirun -np 4 build/bench/bench_replica_transfer [--senders 2] [--rounds 9] [--chunk-mib 2] [--p2p-mib 4]
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "est/context_exchange.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/models/model.h"

namespace {

using Named = std::vector<std::pair<std::string, at::Tensor>>;
using Clock = std::chrono::steady_clock;

double flagValue(int argc, char** argv, const char* name, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atof(argv[i + 1]);
  return fallback;
}

// The transfer before issue 43 (executor_layout.cpp's captureReplica + the one-buffer
// broadcastNamedTensors), bytes only: the records' few bytes are left out.
Named beforeIssue43(tl::comm::Communicator& comm, const Named& mine, const std::vector<std::vector<int64_t>>& shapes) {
  int64_t total = 0;
  Named clones;
  if (comm.rank() == 0) {
    for (const auto& [name, t] : mine) {
      clones.emplace_back(name, t.detach().clone());
      total += int64_t(t.nbytes());
    }
  }
  at::Tensor length = at::full({1}, total, at::kLong);
  comm.broadcast(length, 0);
  at::Tensor buffer = at::empty({length.item<int64_t>()}, at::kByte);
  uint8_t* p = buffer.data_ptr<uint8_t>();
  if (comm.rank() == 0) {
    for (const auto& [name, t] : clones) {
      std::memcpy(p, t.data_ptr(), t.nbytes());
      p += t.nbytes();
    }
  }
  comm.broadcast(buffer, 0);
  Named out;
  if (comm.rank() == 0) return clones;
  p = buffer.data_ptr<uint8_t>();
  for (size_t i = 0; i < shapes.size(); ++i) {
    at::Tensor t = at::empty(shapes[i], at::kFloat);
    std::memcpy(t.data_ptr(), p, t.nbytes());
    p += t.nbytes();
    out.emplace_back(std::to_string(i), std::move(t));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  tl::comm::MpiSession session(&argc, &argv);
  auto world = tl::comm::createMpiWorldCommunicator();
  const int rounds = int(flagValue(argc, argv, "--rounds", 9));
  const int64_t chunk = int64_t(flagValue(argc, argv, "--chunk-mib", 2) * (1 << 20));
  const int64_t piece = int64_t(flagValue(argc, argv, "--p2p-mib", 4) * (1 << 20));
  const int senderCount = std::clamp(int(flagValue(argc, argv, "--senders", 1)), 1, world->size() - 1);
  std::vector<int> senders, joiners;
  for (int r = 0; r < world->size(); ++r) (r < senderCount ? senders : joiners).push_back(r);
  // The owner and the joiners, as a grow's single-sender transfer runs.
  const bool inParty = world->rank() == 0 || world->rank() >= senderCount;
  auto party = world->split(inParty ? 0 : -1, world->rank());
  at::set_num_threads(1);
  const bool printer = world->rank() == 0;

  // One replica: the state dict of ResNet-18 and a momentum buffer per parameter (all fp32 but
  // BatchNorm's counters, which the "before" path's shapes treat as the same bytes).
  torch::manual_seed(0);
  tl::models::ModelConfig mc;
  mc.arch = "resnet18";
  auto model = tl::models::createModel(mc);
  Named replica;
  std::vector<std::vector<int64_t>> shapes;
  int64_t bytes = 0;
  for (const auto& [name, t] : tl::models::stateDict(*model)) {
    if (t.scalar_type() != at::kFloat) continue;  // num_batches_tracked: 8 bytes each, left out
    replica.emplace_back(name, t.detach());
  }
  for (const auto& p : model->parameters()) replica.emplace_back("momentum", at::randn(p.sizes()));
  for (const auto& [name, t] : replica) {
    shapes.push_back(t.sizes().vec());
    bytes += int64_t(t.nbytes());
  }
  const Named none;
  at::Tensor linkFrom = at::ones({bytes}, at::kByte);  // paged in on every process
  const bool owner = world->rank() == 0;
  std::vector<std::pair<std::string, std::function<void()>>> methods = {
      {"link", [&] { if (party) party->broadcast(linkFrom, 0); }},
      {"before", [&] { if (party) beforeIssue43(*party, owner ? replica : none, shapes); }},
      {"after", [&] { if (party) tl::est::broadcastNamedTensors(*party, owner ? replica : none, 0, chunk); }},
      {"senders", [&] {
         const bool sends = world->rank() < senderCount;
         tl::est::sendNamedTensorsFromSenders(*world, {sends ? replica : none}, senders, joiners, piece);
       }},
  };
  std::vector<std::vector<double>> seconds(methods.size());
  for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up, not counted
    for (size_t k = 0; k < methods.size(); ++k) {
      const size_t m = (k + size_t(r)) % methods.size();
      world->barrier();
      const auto t0 = Clock::now();
      methods[m].second();
      at::Tensor s = at::full({1}, std::chrono::duration<double>(Clock::now() - t0).count(), at::kDouble);
      world->allreduce(s, tl::comm::ReduceOp::Max);
      if (r > 0) seconds[m].push_back(s.item<double>());
    }
  }
  if (printer) {
    std::printf("Replica transfer to %d joiners: ResNet-18 state + momentum, %.1f MB, %lld KiB chunks, %d sender(s) "
                "in %lld KiB pieces, median of %d rounds\n\n",
                int(joiners.size()), bytes / 1e6, (long long)(chunk >> 10), senderCount, (long long)(piece >> 10),
                rounds);
    std::printf("%-8s %10s %12s %12s\n", "method", "ms", "MB/s (1 copy)", "x link time");
    const double link = median(seconds[0]);
    for (size_t m = 0; m < methods.size(); ++m) {
      const double s = median(seconds[m]);
      std::printf("%-8s %10.1f %12.0f %12.2f\n", methods[m].first.c_str(), s * 1e3, bytes / 1e6 / s, s / link);
    }
    std::printf("\nafter / before: %.2fx the time; senders / after: %.2fx. Per round (ms), link / before / after / "
                "senders:\n",
                median(seconds[2]) / median(seconds[1]), median(seconds[3]) / median(seconds[2]));
    for (int r = 0; r < rounds; ++r)
      std::printf("  %d: %.1f / %.1f / %.1f / %.1f\n", r + 1, seconds[0][size_t(r)] * 1e3,
                  seconds[1][size_t(r)] * 1e3, seconds[2][size_t(r)] * 1e3, seconds[3][size_t(r)] * 1e3);
  }
  return 0;
}
