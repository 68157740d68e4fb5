#include "runtime/comm/mpi/mpi_spawn.h"

#include <cstdlib>
#include <cstring>

#if TL_HAVE_PMIX
#include <pmix.h>
#endif

#include "common/check.h"
#include "runtime/comm/mpi/mpi_detail.h"

namespace tl::comm {
namespace {

constexpr int kMessageTag = 4242;
constexpr int kJoinTag = 4243;

void sendString(MPI_Comm inter, const std::string& message) {
  TL_MPI_CHECK(MPI_Send(message.data(), int(message.size()), MPI_CHAR, 0, kMessageTag, inter));
}

std::string receiveString(MPI_Comm inter) {
  MPI_Status status;
  TL_MPI_CHECK(MPI_Probe(0, kMessageTag, inter, &status));
  int count = 0;
  TL_MPI_CHECK(MPI_Get_count(&status, MPI_CHAR, &count));
  std::string message(size_t(count), '\0');
  TL_MPI_CHECK(MPI_Recv(message.data(), count, MPI_CHAR, 0, kMessageTag, inter, MPI_STATUS_IGNORE));
  return message;
}

std::string errorText(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return text;
}

}  // namespace

struct SpawnedProcess::Handle {
  MPI_Comm inter = MPI_COMM_NULL;
};
struct ParentLink::Handle {
  MPI_Comm inter = MPI_COMM_NULL;
};

SpawnedProcess::SpawnedProcess(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}

SpawnedProcess::~SpawnedProcess() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && handle_->inter != MPI_COMM_NULL) MPI_Comm_free(&handle_->inter);
}

std::unique_ptr<SpawnedProcess> SpawnedProcess::start(const std::string& program,
                                                      const std::vector<std::string>& args,
                                                      const std::string& host) {
  // A private copy of MPI_COMM_SELF whose errors come back as codes: a process that cannot be
  // started must not end the job.
  MPI_Comm self = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Comm_dup(MPI_COMM_SELF, &self));
  TL_MPI_CHECK(MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN));
  std::vector<std::string> argStore = args;
  std::vector<char*> argv;
  for (std::string& a : argStore) argv.push_back(a.data());
  argv.push_back(nullptr);
  MPI_Info info = MPI_INFO_NULL;
  if (!host.empty()) {
    TL_MPI_CHECK(MPI_Info_create(&info));
    TL_MPI_CHECK(MPI_Info_set(info, "host", host.c_str()));
  }
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
  // PRRTE binds a spawned process to a core of its own by default and refuses the spawn when
  // the job's slots outnumber the cores ("binding processes to more cpus than are available";
  // e.g. --host localhost:3 on 2 cores), which Open MPI 4.1 did not. Unbound, like the job's
  // runs with --bind-to none.
  if (info == MPI_INFO_NULL) TL_MPI_CHECK(MPI_Info_create(&info));
  TL_MPI_CHECK(MPI_Info_set(info, "bind_to", "none"));
#endif
  auto handle = std::make_unique<Handle>();
  int startError = MPI_SUCCESS;
  const int rc = MPI_Comm_spawn(program.c_str(), argv.data(), 1, info, 0, self, &handle->inter, &startError);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  MPI_Comm_free(&self);
  if (rc != MPI_SUCCESS || startError != MPI_SUCCESS) {
    // What MPI left in the handle after a failed spawn is not a communicator to free.
    throw Error(str("could not start a process", host.empty() ? "" : " on host '" + host + "'", ": ",
                    errorText(rc != MPI_SUCCESS ? rc : startError)));
  }
  TL_MPI_CHECK(MPI_Comm_set_errhandler(handle->inter, MPI_ERRORS_RETURN));
  return std::unique_ptr<SpawnedProcess>(new SpawnedProcess(std::move(handle)));
}

void SpawnedProcess::send(const std::string& message) { sendString(handle_->inter, message); }

std::optional<std::string> SpawnedProcess::poll() {
  int arrived = 0;
  TL_MPI_CHECK(MPI_Iprobe(0, kMessageTag, handle_->inter, &arrived, MPI_STATUS_IGNORE));
  if (!arrived) return std::nullopt;
  return receiveString(handle_->inter);
}

std::string SpawnedProcess::receive() { return receiveString(handle_->inter); }

ParentLink::ParentLink(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}

ParentLink::~ParentLink() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && handle_->inter != MPI_COMM_NULL) MPI_Comm_free(&handle_->inter);
}

std::unique_ptr<ParentLink> ParentLink::ofThisProcess() {
  MPI_Comm parent = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Comm_get_parent(&parent));
  if (parent == MPI_COMM_NULL) return nullptr;
  auto handle = std::make_unique<Handle>();
  // Ours to free: once every communicator reaching the lead's job is freed, this process can
  // finalize on its own.
  handle->inter = parent;
  TL_MPI_CHECK(MPI_Comm_set_errhandler(handle->inter, MPI_ERRORS_RETURN));
  return std::unique_ptr<ParentLink>(new ParentLink(std::move(handle)));
}

void ParentLink::send(const std::string& message) { sendString(handle_->inter, message); }
std::string ParentLink::receive() { return receiveString(handle_->inter); }

// Both sides: merge the lead-process intercommunicator into a two-process bridge, build an
// intercommunicator between the members' group and the process over that bridge (whose only
// significant ends are the two leaders), and merge it with the members first.
std::unique_ptr<Communicator> admitProcess(Communicator& members, SpawnedProcess* process) {
  MPI_Comm local = detail::mpiHandle(members);
  const bool lead = members.rank() == 0;
  TL_CHECK(lead == (process != nullptr), "admitProcess: the started process is known on rank 0 only");
  MPI_Comm bridge = MPI_COMM_NULL;
  if (lead) TL_MPI_CHECK(MPI_Intercomm_merge(process->handle().inter, 0, &bridge));
  MPI_Comm inter = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Intercomm_create(local, 0, lead ? bridge : MPI_COMM_NULL, 1, kJoinTag, &inter));
  MPI_Comm merged = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Intercomm_merge(inter, 0, &merged));
  MPI_Comm_free(&inter);
  if (bridge != MPI_COMM_NULL) MPI_Comm_free(&bridge);
  auto widened = detail::adoptMpiCommunicator(merged);
  widened->setTimeout(members.timeout());
  return widened;
}

std::unique_ptr<Communicator> joinLead(ParentLink& lead) {
  MPI_Comm bridge = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Intercomm_merge(lead.handle().inter, 1, &bridge));
  MPI_Comm inter = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 0, bridge, 0, kJoinTag, &inter));
  MPI_Comm merged = MPI_COMM_NULL;
  TL_MPI_CHECK(MPI_Intercomm_merge(inter, 1, &merged));
  MPI_Comm_free(&inter);
  MPI_Comm_free(&bridge);
  return detail::adoptMpiCommunicator(merged);
}

bool jobMayOversubscribe() {
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#if TL_HAVE_PMIX
  // Open MPI has initialised PMIx already: this only counts one more user of it.
  pmix_proc_t me;
  if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) return true;
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  bool may = true;  // not said: leave it to mpirun
  pmix_value_t* value = nullptr;
  if (PMIx_Get(&job, PMIX_MAPBY, nullptr, 0, &value) == PMIX_SUCCESS && value != nullptr) {
    if (value->type == PMIX_STRING && value->data.string != nullptr) {
      // "BYCORE:OVERSUBSCRIBE" or "BYCORE:NOOVERSUBSCRIBE"
      const std::string policy = value->data.string;
      may = policy.find(":OVERSUBSCRIBE") != std::string::npos;
    }
    PMIX_VALUE_RELEASE(value);
  }
  PMIx_Finalize(nullptr, 0);
  return may;
#else
  return true;
#endif
#else
  const char* over = std::getenv("OMPI_MCA_rmaps_base_oversubscribe");
  return over != nullptr && std::atoi(over) != 0;
#endif
}

}  // namespace tl::comm
