// In-memory backend: P ranks as P threads of one process, for tests that run "N ESTs on P ranks"
// in seconds without mpirun. No MPI, CPU tensors only.
//
// Threading model. A world has `size` ranks; each rank is one thread, which calls join(rank)
// once, uses the communicators it gets (and those split from them) from that thread only, and
// calls leave(rank) when done. Calls from any other thread throw tl::Error.
//
// Baton mode (InMemoryOptions::serialized, the default): exactly one rank thread runs rank code
// at a time. libtorch's default CPU generator and other process-global state would otherwise be
// raced on by the ranks, which in a real job are separate processes. A rank holds the baton from
// join() on; it lets go of it only while it is blocked inside a collective of this world, and
// takes it back before that collective returns or throws; leave() gives it up for good. The
// baton goes to the next runnable rank in rank order after the one letting go (a rank that has
// not joined yet counts as runnable), so for deterministic rank code the interleaving is
// deterministic too. Every rank must join, or the baton stops at the missing one. Each rank also
// owns a libtorch default CPU generator of its own (InMemoryOptions::perRankCpuGenerator),
// saved when it lets go of the baton and restored when it takes it: a rank sees the generator
// exactly as its own process would, starting from libtorch's default seed.
//
// Collectives. Every member calls them in the same order, like MPI; a member whose call does not
// match the others' (another operation, dtype, element count or root) fails the communicator.
// Reductions run on the thread of the last member to arrive, in rank order (((r0 + r1) + r2)
// ...), so results never depend on thread timing.
//
// Errors are sticky for the whole communicator, on every member: after a timeout or mismatch,
// every pending and later call of every member throws that same exception. abort() does the
// same for every communicator of the world; a test harness calls it when a rank throws, so the
// other ranks fail fast instead of waiting for their timeouts.
#pragma once

#include <memory>
#include <string>

#include "runtime/comm/communicator.h"

namespace tl::comm {

struct InMemoryOptions {
  // Baton mode (see above). false: rank threads run concurrently, for code that touches no
  // process-global state.
  bool serialized = true;
  // Baton mode only: each rank has its own default CPU generator (see above). When every rank
  // has left, the generator is back in the state it had when the world was created.
  bool perRankCpuGenerator = true;
};

class InMemoryWorld {
 public:
  virtual ~InMemoryWorld() = default;
  virtual int size() const = 0;
  // On rank `rank`'s own thread, once: its communicator over the whole world. In baton mode it
  // first waits for the baton.
  virtual std::unique_ptr<Communicator> join(int rank) = 0;
  // On the rank's thread, when it is done with rank code (also after a failure): passes the
  // baton on for good. Its communicators must not be used afterwards.
  virtual void leave(int rank) = 0;
  // Fails every communicator of the world: pending and later collectives throw tl::Error
  // "in-memory world aborted: <reason>". Any thread; the first reason is kept.
  virtual void abort(const std::string& reason) = 0;
};

std::shared_ptr<InMemoryWorld> createInMemoryWorld(int size, const InMemoryOptions& options = {});

}  // namespace tl::comm
