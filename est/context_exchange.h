// Moving EST contexts between the members of a job: each member packs its local ESTs' contexts
// (est_context.h) into fixed-size records and one allgather gives every member all of them.
// Also the named tensors a member that joins needs (model, optimizer, reducer): broadcast from
// one member, or sent from every member that holds them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "est/est_context.h"
#include "est/placement.h"
#include "runtime/comm/communicator.h"

namespace tl::est {

// Collective over `comm` (whose ranks index `placement`); `local` are this member's contexts in
// logical-rank order. Returns all N contexts by logical rank on `root`, on every member when
// root < 0, and an empty vector elsewhere.
std::vector<EstContext> gatherContexts(comm::Communicator& comm, const Placement& placement,
                                       const std::vector<EstContext>& local, int root);

// Collective over `comm`: every member gets `root`'s named CPU tensors (names, dtypes and
// shapes included; what other members pass is ignored). The root gets its own tensors back
// (not copies, when they are contiguous CPU tensors). The bytes travel in broadcasts of at
// most `chunkBytes` through one reused buffer (issue 43: no whole-replica buffer to page in).
// 2 MiB: the buffer stays in cache; over shared memory that moved ResNet-18's replica at the
// speed of one plain broadcast, where 8 MiB took 1.6x and 32 MiB 2.6x as long
// (bench_replica_transfer, docs/design/grow-pause.md).
std::vector<std::pair<std::string, at::Tensor>> broadcastNamedTensors(
    comm::Communicator& comm, const std::vector<std::pair<std::string, at::Tensor>>& mine, int root,
    int64_t chunkBytes = int64_t(2) << 20);

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Issue 43: the replica from every member that holds it. Point-to-point over `comm`
// (comm.pointToPoint()), between `senders` and `receivers` (ranks of `comm`) only: members in
// neither do not call it. Every sender holds the same `parts` (names, dtypes, shapes and bytes
// alike: a data-parallel replica, e.g. model, optimizer, reducer); what receivers pass is
// ignored. Every receiver gets them: the records (names, dtypes, shapes) from senders[0], the
// bytes as one stream cut into senders.size() even shares, sender i sending the i-th share to
// every receiver in pieces of at most `chunkBytes` (and never across a tensor's end). Every
// piece is started at once and goes straight from the sender's tensor into the receiver's new
// one: nothing is packed or unpacked, and a receiver takes from all senders at the same time.
// Senders get their own tensors back (not copies, when they are contiguous CPU tensors).
std::vector<NamedTensors> sendNamedTensorsFromSenders(comm::Communicator& comm, const std::vector<NamedTensors>& parts,
                                                      const std::vector<int>& senders,
                                                      const std::vector<int>& receivers,
                                                      int64_t chunkBytes = int64_t(4) << 20);

}  // namespace tl::est
