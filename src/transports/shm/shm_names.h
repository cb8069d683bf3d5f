// Names of shm segments, and cleanup of those whose creator died.
//
// A segment is named "/chorus-shm-<comm tag>-<rank>-<pid>-<32 random hex>".
// The comm tag is a keyed hash of the communicator secret (it reveals
// nothing of it), so every rank of a communicator can find the segments of
// its communicator even when it never learned their names.
//
// What guarantees that no segment outlives its use:
//  1. Normal set-up: the creator unlinks the name once every peer mapped it.
//  2. A failed set-up (Connect fails, or the transport is dropped
//     unconnected), and every shutdown: the rank unlinks its own name and
//     every segment of its communicator whose creator is gone
//     (UnlinkSegmentsOfDeadRanks), so a creator killed after its peers
//     mapped its segment and before it unlinked the name leaves nothing
//     once a survivor shuts down.
//  3. Every other way (every rank of a communicator killed during set-up,
//     e.g. SIGKILL or an unhandled SIGTERM while waiting at the rendezvous):
//     whoever creates a segment next sweeps the orphans of every
//     communicator (SweepOrphanedSegments), so a leak lasts at most until
//     the next Chorus communicator on this host starts after kOrphanMinAge.
// A segment is orphaned only when all of these hold, so no live segment is
// ever removed, whatever pid namespaces or pid reuse do:
//  - the creator's advisory lock is free: ShmSegment::Create takes flock
//    LOCK_EX on the file and holds it while the name exists; the kernel
//    drops it when the creator exits however it dies, and it is on the
//    file, not a pid, so a live creator in another pid namespace (whose pid
//    means nothing here) or a reused pid cannot fool it;
//  - the pid in the name (and, once written, the header's owner_pid) names
//    no live process (kill(pid, 0) is ESRCH, or a zombie);
//  - the file is a regular file of this user, mode 0600, as Create makes;
//  - for the host-wide sweep, its mtime (set at creation) is kOrphanMinAge
//    old: far longer than the instant between shm_open and flock, and than
//    the set-up (default deadline 5 minutes) of a Chorus build older than
//    the lock, whose live creators only the pid check protects.
// Another user's, unreadable or unparsable files are left alone silently.
#pragma once

#include <sys/types.h>

#include <chrono>
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

// How long a segment must have been left unchanged before the host-wide
// sweep may take it for an orphan (see above).
constexpr std::chrono::minutes kOrphanMinAge{10};

// What SweepOrphanedSegments looks at; tests move the clock and narrow the
// files to their own.
struct OrphanSweep {
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
  std::chrono::seconds min_age = kOrphanMinAge;
  std::string file_prefix = "chorus-shm-";  // in /dev/shm, without the '/'
};

// Unlinks every /dev/shm segment of any communicator that is orphaned (see
// above); returns how many and logs the count at INFO. Never fails.
int SweepOrphanedSegments(const OrphanSweep& sweep = OrphanSweep());

}  // namespace shm
}  // namespace chorus
