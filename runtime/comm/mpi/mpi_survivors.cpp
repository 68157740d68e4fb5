// createSurvivorsCommunicator: a communicator of the members that remain after others were lost,
// made without the lost ones (in-place recovery, elastic/recovery/in_place.h).
#include <algorithm>

#include "common/check.h"
#include "runtime/comm/mpi/mpi_communicator.h"
#include "runtime/comm/mpi/mpi_detail.h"

namespace tl::comm {

std::unique_ptr<Communicator> createSurvivorsCommunicator(Communicator& comm, const std::vector<int>& lostRanks) {
  detail::checkOnMpiThread("createSurvivorsCommunicator");
  TL_CHECK(comm.backend() == "mpi", "survivors' communicator: expected an MPI communicator, got ", comm.backend());
  for (int r : lostRanks) TL_CHECK(r >= 0 && r < comm.size(), "survivors' communicator: no rank ", r);
  TL_CHECK(std::find(lostRanks.begin(), lostRanks.end(), comm.rank()) == lostRanks.end(),
           "survivors' communicator: this process is among the lost");
  const MPI_Comm old = detail::mpiHandle(comm);
  MPI_Group all = MPI_GROUP_NULL, survivors = MPI_GROUP_NULL;
  TL_MPI_CHECK(MPI_Comm_group(old, &all));
  TL_MPI_CHECK(MPI_Group_excl(all, int(lostRanks.size()), lostRanks.data(), &survivors));
  MPI_Comm child = MPI_COMM_NULL;
  // Collective over the survivors only (MPI_Comm_split would wait for the lost members too).
  constexpr int kSurvivorsTag = 0x71c0;
  const int rc = MPI_Comm_create_group(old, survivors, kSurvivorsTag, &child);
  MPI_Group_free(&survivors);
  MPI_Group_free(&all);
  TL_MPI_CHECK(rc);
  auto communicator = detail::adoptMpiCommunicator(child, detail::mpiOptions(comm));
  communicator->setTimeout(comm.timeout());
  return communicator;
}

}  // namespace tl::comm
