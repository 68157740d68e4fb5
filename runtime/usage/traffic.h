// What a process moved through its communicators: one event per collective call (when, how
// long, bytes sent and received), filled by CountingCommunicator on the training thread and
// drained by the UsageRecorder on the same thread.
//
// Bytes are those of the bandwidth-optimal algorithm for the call, per member, so that they
// do not depend on which algorithm the backend picked on this run:
//   allreduce of B bytes over N members  sends and receives 2(N-1)/N x B (ring: reduce-scatter
//                                        then allgather)
//   broadcast of B bytes                 the root sends B, every other member receives B
//   allgather of B bytes per member      sends (N-1) x B and receives (N-1) x B
//   reduce-scatter of a B-byte buffer,   sends and receives (N-1)/N x B (a ring's half)
//   segment allgather into B bytes
//   barrier, split                       no payload
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace tl::usage {

struct TrafficEvent {
  double start = 0;   // seconds on the steady clock (usage::now())
  double end = 0;
  int64_t sent = 0;
  int64_t received = 0;
};

struct TrafficBytes {
  int64_t sent = 0;
  int64_t received = 0;
};
TrafficBytes allreduceBytes(int64_t bytes, int members);
TrafficBytes broadcastBytes(int64_t bytes, int members, bool root);
TrafficBytes allgatherBytes(int64_t bytesPerMember, int members);
// A reduce-scatter of, or a segment allgather into, a buffer of `bytes` (Communicator::
// startReduceScatter, startAllgatherSegments): each half of allreduceBytes.
TrafficBytes halfRingBytes(int64_t bytes, int members);

// Seconds on the steady clock; every usage timestamp uses it.
double now();

class TrafficLog {
 public:
  void add(const TrafficEvent& e, double callCpuSeconds);
  // The events since the last take, in call order.
  std::vector<TrafficEvent> take();
  int64_t sentTotal() const { return sent_; }
  int64_t receivedTotal() const { return received_; }
  // CPU time the calling thread spent inside collectives (MPI progresses by polling, so a
  // waiting collective burns CPU that is not compute). Read by the sampler thread.
  double callCpuSeconds() const { return callCpuNs_.load(std::memory_order_relaxed) * 1e-9; }

 private:
  std::vector<TrafficEvent> events_;
  int64_t sent_ = 0;
  int64_t received_ = 0;
  std::atomic<int64_t> callCpuNs_{0};
};

}  // namespace tl::usage
