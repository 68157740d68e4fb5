// Assembles an EstExecutor from a job definition (JobConfig), a layout (Placement) and the
// communicators of the job's members: data, model replica, optimizer, the reducer the job's
// mode asks for, the step backend its device asks for, and the local ESTs' fresh contexts.
//
// No collective calls: bad input is an InputError on every rank on its own, so the ranks can
// agree on one message before the job starts.
#pragma once

#include <memory>

#include "est/executor.h"

namespace tl::est {

class ExecutorBuilder {
 public:
  explicit ExecutorBuilder(JobConfig job) : job_(std::move(job)) {}
  // `placement` over the members of `host` (this process's rank there picks its ESTs);
  // `device` carries gradients and model state (`host` itself, or an NCCL communicator).
  ExecutorBuilder& layout(Placement placement, comm::Communicator& host, comm::Communicator& device);

  // With --overlap, run backward on a helper thread and hand the gradients over to the training
  // thread on the CPU too, as on a GPU (tests of the GPU's path; a CUDA device always does).
  ExecutorBuilder& backwardOnHelperThread(bool on) {
    backwardThread_ = on;
    return *this;
  }

  EstExecutor::Parts parts();
  std::unique_ptr<EstExecutor> build() { return std::make_unique<EstExecutor>(parts()); }

 private:
  JobConfig job_;
  std::optional<Placement> placement_;
  comm::Communicator* host_ = nullptr;
  comm::Communicator* device_ = nullptr;
  bool backwardThread_ = false;
};

}  // namespace tl::est
