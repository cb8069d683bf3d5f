// A rank's index among the ranks of its host before the rendezvous has
// told anyone who shares a host: what the launcher says, else `fallback`.
#pragma once

namespace chorus {

// LOCAL_RANK (torchrun), OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
// MPI_LOCALRANKID (MPICH), PMI_LOCAL_RANK, in that order; `fallback` when
// none is set to a non-negative integer.
int LauncherLocalRank(int fallback);

}  // namespace chorus
