// What the main of an MPI gtest binary (mpi_gtest_main.cpp) offers its tests.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/comm/mpi/mpi_communicator.h"

namespace tl::comm::testing {

// The process's MPI session.
MpiSession& session();

// An MPI communicator over the whole job, for tests to coordinate ranks (e.g. to wait until
// every rank has checked something), whatever backend they test.
Communicator& world();

}  // namespace tl::comm::testing
