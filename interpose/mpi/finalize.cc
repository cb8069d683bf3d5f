// MPI_Finalize: Chorus communicators still alive (MPI_COMM_WORLD's, those of
// communicators the program never freed) are destroyed before MPI's, which
// releases their shared-memory segments, sockets and threads; then the
// per-rank summary (CHORUS_DEBUG=INFO).
#include <mpi.h>

#include "interpose/mpi/comm_registry.h"
#include "interpose/mpi/progress.h"
#include "interpose/mpi/report.h"

extern "C" int MPI_Finalize(void) {
  if (chorus_mpi::Enabled()) {
    chorus_mpi::DestroyAllComms();
    chorus_mpi::StopProgressHelper();
  }
  chorus_mpi::LogSummary();
  return PMPI_Finalize();
}
