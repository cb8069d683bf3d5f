// Names of shm segments, and cleanup of those whose creator died.
//
// A segment is named "/chorus-shm-<comm tag>-<rank>-<pid>-<32 random hex>".
// The comm tag is a keyed hash of the communicator secret (it reveals
// nothing of it), so every rank of a communicator can find the segments of
// its communicator even when it never learned their names: a rank killed
// after creating its segment but before its peers mapped it (the name is
// unlinked only then) leaves a file that the survivors remove when their
// own set-up fails. Only segments whose creating process is gone are
// removed, so another live communicator with the same secret (a fixed
// CHORUS_SECRET) keeps its segments.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace chorus {
namespace shm {

// "/chorus-shm-<comm tag>-": the names of one communicator's segments.
std::string CommSegmentPrefix(const uint8_t secret[16]);
// The prefix ShmSegment::Create completes for `rank` in process `pid`.
std::string SegmentPrefix(const uint8_t secret[16], int rank, pid_t pid);

// The process has exited (or is a zombie); kill(pid, 0) alone misses zombies.
bool ProcessGone(pid_t pid);

// Unlinks every /dev/shm segment of the communicator whose creator is gone;
// returns how many. Best effort: segments of other users cannot be removed.
int UnlinkSegmentsOfDeadRanks(const uint8_t secret[16]);

}  // namespace shm
}  // namespace chorus
