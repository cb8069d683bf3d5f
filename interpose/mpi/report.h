// Settings read from the environment, logging and per-rank statistics of
// the interposer.
//
//   CHORUS_MPI=0        every call passes to MPI unchanged (Enabled() false)
//   CHORUS_MPI_PROGRESS=0  no helper thread driving MPI progress (progress.h)
//   CHORUS_MPI_MAX_COMMS   Chorus communicators alive at once per process
//   CHORUS_DEBUG=INFO   one line per communicator and call shape saying
//                       whether Chorus served it or why it passed through,
//                       and a summary per rank at MPI_Finalize
//   CHORUS_DEBUG_SUBSYS and CHORUS_DEBUG_FILE as in libchorus (subsystem MPI)
#pragma once

#include <mpi.h>
#include <stddef.h>

namespace chorus_mpi {

bool Enabled();
bool InfoEnabled();
bool ProgressHelperEnabled();

// At most this many Chorus communicators alive per process (each holds
// sockets and, per host, shared-memory rings of a MiB per pair of ranks);
// communicators beyond it pass to MPI.
int MaxComms();
constexpr int kDefaultMaxComms = 32;

// The deadline every Chorus communicator of the interposer gets: the value
// of CHORUS_TIMEOUT_MS when it is set, else kDefaultTimeoutMs.
int TimeoutMs();
// MPI waits for a late rank without limit; a day stands for that (a peer
// that dies is noticed when its process ends, whatever the deadline).
constexpr int kDefaultTimeoutMs = 24 * 3600 * 1000;

void LogWarn(const char* format, ...) __attribute__((format(printf, 1, 2)));
void LogInfo(const char* format, ...) __attribute__((format(printf, 1, 2)));

enum class Call {
  kAllreduce,
  kBcast,
  kReduce,
  kAllgather,
  kReduceScatterBlock,
  kAlltoall,
  kGather,
  kScatter,
  kBarrier,
  kIallreduce,
  kIbcast,
};
const char* CallName(Call call);

// What identifies a call for the once-per-shape log line.
struct Shape {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  long long count = 0;
  bool has_root = false;
  int root = 0;
  bool in_place = false;
};

// Counts a call (bytes: this rank's payload) as served by Chorus
// (fallback_reason nullptr) or passed to MPI, and logs its shape once per
// communicator at INFO.
void NoteCall(Call call, MPI_Comm comm, const Shape& shape, size_t bytes, const char* fallback_reason);

// A Chorus communicator was created.
void NoteCommCreated();

// The per-rank summary line (INFO), at MPI_Finalize.
void LogSummary();

}  // namespace chorus_mpi
