#include "topology/local_rank.h"

#include <cstdlib>
#include <initializer_list>

namespace chorus {

int LauncherLocalRank(int fallback) {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                           "PMI_LOCAL_RANK"}) {
    const char* text = std::getenv(name);  // launcher variables, not Chorus settings: outside the config table
    if (text == nullptr || *text == '\0') continue;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value >= 0 && value < (1 << 30)) return static_cast<int>(value);
  }
  return fallback;
}

}  // namespace chorus
