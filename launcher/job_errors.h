// Agreement on start-up errors: every rank prepares its part of the job without collective
// calls, then all ranks learn whether anyone failed, so a bad flag or file ends the whole job
// with one clear message and a non-zero exit instead of a hang.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "runtime/comm/communicator.h"

namespace tl::launcher {

// Runs `prepare` and reports its failure to every rank. Returns 0 when every rank succeeded;
// otherwise the exit code (2 for bad input, 1 for anything else) every rank should exit with.
// The message is printed once: by rank 0 if it failed, else by the lowest failing rank.
int prepareOnAllRanks(comm::Communicator& world, const std::string& program,
                      const std::function<void()>& prepare);

// Prints "<program>: error: <what>" to stderr, without a C++ backtrace that `what` may carry
// (libtorch's errors append one).
void printError(const std::string& program, const std::string& what);

// The message of `e` for a user: libtorch's errors without their backtrace; running out of
// memory as "out of memory <while>: ..." (see train::whileBuilding).
std::string errorMessage(const std::exception& e,
                         const std::string& during = "while preparing the job");

// The exit status for `e`: 2 for bad input (InputError, running out of memory), 1 otherwise.
int exitCodeFor(const std::exception& e);

}  // namespace tl::launcher
