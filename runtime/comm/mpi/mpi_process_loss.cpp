#include "runtime/comm/process_loss.h"

#include <mpi.h>

#include <cstddef>
#include <iterator>

#if TL_HAVE_PMIX
#include <pmix.h>
#endif

namespace tl::comm {

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5 && TL_HAVE_PMIX

namespace {

void (*gOnLoss)() = nullptr;

void onEvent(size_t, pmix_status_t, const pmix_proc_t*, pmix_info_t[], size_t, pmix_info_t*, size_t,
             pmix_event_notification_cbfunc_fn_t done, void* doneData) {
  if (gOnLoss != nullptr) gOnLoss();
  // Let the other handlers (Open MPI's own) see it too.
  if (done != nullptr) done(PMIX_SUCCESS, nullptr, 0, nullptr, nullptr, doneData);
}

}  // namespace

bool notifyOnProcessLoss(void (*onLoss)()) {
  // Open MPI has initialised PMIx already: this only counts one more user of it, never finalised
  // here so that the handler stays registered until the process ends.
  pmix_proc_t me;
  if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) return false;
  gOnLoss = onLoss;
  pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED_BY_SIG, PMIX_ERR_PROC_ABORTED,
                           PMIX_ERR_PROC_REQUESTED_ABORT, PMIX_ERR_PROC_TERM_WO_SYNC,
                           PMIX_ERR_EXIT_NONZERO_TERM,    PMIX_ERR_PROC_KILLED_BY_CMD};
  // No registration callback: PMIx registers before it returns (a handler id, or an error < 0).
  const pmix_status_t id =
      PMIx_Register_event_handler(codes, std::size(codes), nullptr, 0, onEvent, nullptr, nullptr);
  return id >= 0;
}

#else

bool notifyOnProcessLoss(void (*)()) { return false; }

#endif

}  // namespace tl::comm
