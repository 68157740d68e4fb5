// A Communicator that forwards every call to another one and records its traffic in a
// TrafficLog: the recording of what a job sends and receives, without touching the backends.
// Communicators split from it count into the same log.
//
// Threading: as any Communicator, one thread (the training thread).
#pragma once

#include <memory>

#include "runtime/comm/communicator.h"
#include "runtime/usage/traffic.h"

namespace tl::usage {

// `inner` and `log` must outlive the result.
std::unique_ptr<comm::Communicator> countTraffic(comm::Communicator& inner, TrafficLog& log);

}  // namespace tl::usage
