// The ESTs a process holds, as fibers: "all local ESTs compute once" is one call, run().
//
// Each local EST is a fiber that waits for its turn, takes its next micro-batch (or, in a
// replay, keeps the one it has), installs the generator states it started the step with when
// replaying, and lets the step backend compute and contribute its gradient. ESTs run in
// logical-rank order; the fiber scheduler swaps each EST's generators in and out around its
// turn (GeneratorSwitcher), so the main fiber runs with every context saved.
//
// Threading: created, run and destroyed on the training thread's main fiber. The contexts in
// `local` must outlive the round and stay where they are (the fibers hold pointers to them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "est/est_context.h"
#include "est/fiber_scheduler.h"
#include "est/local_batches.h"
#include "est/step_backend.h"
#include "est/step_sync.h"

namespace tl::est {

class LocalRound {
 public:
  LocalRound(std::vector<EstContext>& local, int logicalWorkers, c10::Device device,
             std::unique_ptr<LocalBatches> batches, StepBackend& backend);
  ~LocalRound();  // tells the fibers to finish and joins them
  LocalRound(const LocalRound&) = delete;
  LocalRound& operator=(const LocalRound&) = delete;

  // Before a step's first round: `epoch` is the epoch the step's batches must come from.
  void beginStep(int64_t epoch);
  // Every local EST computes once; `replay`: the same batch and generator states as the step's
  // first pass. Rethrows an EST's error.
  void run(bool replay);

  // The local ESTs' loss/accuracy of the last round, and their compute time this step.
  train::BatchStats localStats() const;
  double computeSeconds() const;
  // Emulates a slower device (--emulate-slowdown): after each EST's compute, sleep (factor - 1)
  // times what it took; the sleep counts as compute. Timing only: nothing computed changes.
  void setSlowdown(double factor) { slowdown_ = factor; }
  // The memory one more local EST holds between its turns: its micro-batch (images and labels
  // on the device, kept by its fiber) and its generator states. The largest over the local ESTs.
  double bytesPerEst() const;
  data::Loader& loader() { return batches_->loader(); }

 private:
  void estBody(int i);

  std::vector<EstContext>& local_;
  c10::Device device_;
  std::unique_ptr<LocalBatches> batches_;
  StepBackend& backend_;
  StepSync sync_;
  std::vector<train::BatchStats> stats_;
  std::vector<double> compute_;
  std::vector<double> estBytes_;
  double slowdown_ = 1.0;
  int64_t epoch_ = 0;
  std::unique_ptr<GeneratorSwitcher> switcher_;
  std::unique_ptr<EstFibers> fibers_;
};

}  // namespace tl::est
