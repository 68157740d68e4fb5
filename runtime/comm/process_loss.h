// Being told by the MPI runtime that a process of the job was lost, where it says so.
//
// Open MPI 4's mpirun ends a job whose rank died with SIGCONT, then SIGTERM and SIGKILL
// odls_base_sigkill_timeout seconds apart, and a survivor writes its copy of the job at the
// first (elastic/recovery/recovery_guard.h). Open MPI 5's daemon (PRRTE) sends the three 0.25 s
// apart, with no setting to wait longer: too short for a survivor inside an optimizer update to
// finish it and write its copy. tl-run therefore starts Open MPI 5 jobs as recoverable with
// error notification (mpirun --runtime-options recoverable,notifyerrors): the runtime then ends
// nobody and tells every remaining process through a PMIx event instead, which this forwards.
// Light header: no <mpi.h> or PMIx here.
#pragma once

namespace tl::comm {

// After MPI_Init: calls `onLoss` (on the runtime's thread; keep it async-signal-safe in spirit:
// no locks) whenever the runtime reports a process of the job lost (killed by a signal,
// aborted, ended with an error or without finalising). False where this build or runtime cannot
// say (Open MPI 4, no PMIx): there mpirun's signals are the notice, as before.
bool notifyOnProcessLoss(void (*onLoss)());

}  // namespace tl::comm
