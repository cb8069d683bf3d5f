/*
 * Chorus: collective communication for distributed deep-learning training.
 *
 * An NCCL-shaped C API. Every collective takes its arguments in NCCL's order
 * and ends with (comm, stream). Buffers are host memory, or CUDA device
 * memory in builds with CUDA (docs/api.md, "Device buffers").
 *
 * Error handling: every call returns a chorusResult_t. On failure a human
 * readable message is available from chorusGetLastError(comm) (or
 * chorusGetLastError(NULL) for errors not tied to a communicator, e.g. at
 * init). Invalid input is rejected before anything is written.
 *
 * Asynchrony: a collective is enqueued on its stream and runs in stream
 * order; chorusStreamSynchronize waits for it and returns the error of the
 * first failed operation. Passing a NULL stream makes the call blocking.
 *
 * Thread safety: distinct communicators may be used concurrently from
 * different threads. Operations on one communicator must be issued in the
 * same order on every rank (as with NCCL).
 *
 * The explicit non-exact collectives are declared in chorus_lossy.h, which
 * this header includes at its end.
 */
#ifndef CHORUS_CHORUS_H_
#define CHORUS_CHORUS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHORUS_MAJOR 0
#define CHORUS_MINOR 1
#define CHORUS_PATCH 0
/** Version as an integer: MAJOR*10000 + MINOR*100 + PATCH. */
#define CHORUS_VERSION_CODE (CHORUS_MAJOR * 10000 + CHORUS_MINOR * 100 + CHORUS_PATCH)

/** Opaque communicator handle. */
typedef struct chorusComm* chorusComm_t;
/** Opaque host stream handle. NULL means "blocking call". */
typedef struct chorusStream* chorusStream_t;
/** Opaque event handle: a point in a stream's queue (chorusEventRecord). */
typedef struct chorusEvent* chorusEvent_t;

#define CHORUS_UNIQUE_ID_BYTES 128
/**
 * Rendezvous token made by chorusGetUniqueId on one rank and passed to all
 * others out of band (MPI_Bcast, a file, ...). It holds the root's address
 * and a random 128-bit secret every connection must prove it knows: treat
 * it like a password.
 */
typedef struct {
  char internal[CHORUS_UNIQUE_ID_BYTES];
} chorusUniqueId;

typedef enum {
  chorusSuccess = 0,
  chorusSystemError = 1,      /**< an OS call failed (socket, memory, thread) */
  chorusInternalError = 2,    /**< a bug or a protocol violation */
  chorusInvalidArgument = 3,  /**< a bad value was passed */
  chorusInvalidUsage = 4,     /**< a call made in the wrong state */
  chorusRemoteError = 5,      /**< a peer failed or disconnected */
  chorusInProgress = 6,       /**< operation not finished yet (queries) */
  chorusTimeout = 7,          /**< a deadline (CHORUS_TIMEOUT_MS) passed */
  chorusRevoked = 8,          /**< the communicator was revoked (chorusCommRevoke) */
  chorusNumResults = 9
} chorusResult_t;

typedef enum {
  chorusInt8 = 0,
  chorusChar = 0,
  chorusUint8 = 1,
  chorusInt32 = 2,
  chorusInt = 2,
  chorusUint32 = 3,
  chorusInt64 = 4,
  chorusUint64 = 5,
  chorusFloat16 = 6,
  chorusHalf = 6,
  chorusFloat32 = 7,
  chorusFloat = 7,
  chorusFloat64 = 8,
  chorusDouble = 8,
  chorusBfloat16 = 9,
  chorusNumTypes = 10
} chorusDataType_t;

/**
 * Reduction operators. chorusAvg is Sum / nranks; for integer types the
 * division truncates toward zero (C semantics). Ops made by
 * chorusRedOpCreatePreMulSum have values >= chorusNumOps.
 */
typedef enum {
  chorusSum = 0,
  chorusProd = 1,
  chorusMax = 2,
  chorusMin = 3,
  chorusAvg = 4,
  chorusNumOps = 5,
  chorusMaxRedOp = 0x7fffffff
} chorusRedOp_t;

/** Where chorusRedOpCreatePreMulSum finds its scalar. */
typedef enum {
  chorusScalarDevice = 0,   /**< read from *scalar at each call (host memory here) */
  chorusScalarHostImmediate = 1  /**< read once at creation */
} chorusScalarResidence_t;

/** Where a buffer lives (chorusPointerGetMemoryKind). */
typedef enum {
  chorusMemoryHost = 0,           /**< ordinary (pageable) host memory */
  chorusMemoryCudaDevice = 1,     /**< cudaMalloc'ed or managed memory */
  chorusMemoryCudaHostPinned = 2  /**< cudaHostAlloc'ed or registered host memory */
} chorusMemoryKind_t;

/**
 * Communicator configuration. Initialise with CHORUS_CONFIG_INITIALIZER and
 * set only the fields you need; unset fields fall back to the environment
 * (CHORUS_*) and then to built-in defaults.
 */
typedef struct {
  size_t size;          /**< sizeof(chorusConfig_t), set by the initializer */
  unsigned int magic;   /**< set by the initializer */
  unsigned int version; /**< set by the initializer */
  int blocking;         /**< 1 (default): init returns when connected */
  int timeoutMs;        /**< deadline of every wait; <0: CHORUS_TIMEOUT_MS */
  int nSocks;           /**< TCP sockets per peer; <0: CHORUS_NSOCKS */
  long long chunkBytes; /**< pipeline chunk size; <0: CHORUS_CHUNK_BYTES */
  const char* algo;     /**< like CHORUS_ALGO; NULL: environment */
  const char* netName;  /**< informative name of this communicator */
} chorusConfig_t;

#define CHORUS_CONFIG_MAGIC 0xc0c05u
#define CHORUS_CONFIG_INITIALIZER                                      \
  {                                                                    \
    sizeof(chorusConfig_t), CHORUS_CONFIG_MAGIC, CHORUS_VERSION_CODE, \
        1, -1, -1, -1, NULL, NULL                                      \
  }

/** Split colour meaning "not part of any new communicator". */
#define CHORUS_SPLIT_NOCOLOR (-1)

/* ---- Library and communicator management ---------------------------- */

/** Writes CHORUS_VERSION_CODE of the library to *version. */
chorusResult_t chorusGetVersion(int* version);

/**
 * Creates a rendezvous id on the calling process: it starts a listener that
 * serves one communicator creation (until it completes or CHORUS_TIMEOUT_MS
 * passes). The listening interface follows CHORUS_SOCKET_IFNAME.
 */
chorusResult_t chorusGetUniqueId(chorusUniqueId* uniqueId);

/** Joins communicator `commId` as rank `rank` of `nranks` (collective). */
chorusResult_t chorusCommInitRank(chorusComm_t* comm, int nranks,
                                  chorusUniqueId commId, int rank);

/** As chorusCommInitRank with explicit configuration (config may be NULL). */
chorusResult_t chorusCommInitRankConfig(chorusComm_t* comm, int nranks,
                                        chorusUniqueId commId, int rank,
                                        chorusConfig_t* config);

/**
 * Creates `ndev` communicators in this process, one per rank, ranks as
 * threads. devlist is ignored on host builds (may be NULL).
 */
chorusResult_t chorusCommInitAll(chorusComm_t* comms, int ndev,
                                 const int* devlist);

/**
 * Creates a communicator from the launcher's environment:
 *  - rank/size from OMPI_COMM_WORLD_RANK/SIZE (mpirun), PMI_RANK/PMI_SIZE,
 *    SLURM_PROCID/SLURM_NTASKS (srun) or RANK/WORLD_SIZE (torchrun);
 *  - rendezvous from CHORUS_ROOT=host:port or MASTER_ADDR/MASTER_PORT:
 *    rank 0 listens there, the others connect;
 *  - the secret from CHORUS_SECRET (32 hex digits, the same on every rank).
 *    Without it a secret is derived from the launcher's job id
 *    (SLURM_JOB_ID, OMPI_MCA_ess_base_jobid, TORCHELASTIC_RUN_ID) and a
 *    warning is logged, since anyone who knows the job id can derive it.
 */
chorusResult_t chorusCommInitFromEnv(chorusComm_t* comm,
                                     chorusConfig_t* config);

/**
 * Splits `comm` by colour, ordering each new communicator by (key, old rank).
 * Collective over `comm`. Ranks passing CHORUS_SPLIT_NOCOLOR get NULL.
 */
chorusResult_t chorusCommSplit(chorusComm_t comm, int color, int key,
                               chorusComm_t* newcomm,
                               chorusConfig_t* config);

/**
 * Fault tolerance, after ULFM's MPIX_Comm_shrink: makes a new communicator
 * over the ranks of `comm` that are still alive. Call it on every surviving
 * rank once `comm` has failed (an operation returned chorusRemoteError,
 * chorusTimeout or chorusRevoked, or chorusCommGetAsyncError reports one;
 * chorusCommRevoke makes every rank see it at once), or on a healthy
 * `comm` (then the new communicator has the same ranks). Ranks that are dead,
 * or that do not call it before 3/4 of the timeout (config timeoutMs, else
 * the one of `comm`), are left out; the others are renumbered densely in
 * their old rank order. It works whichever ranks died, rank 0 included.
 * `comm` itself stays failed: destroy or abort it as usual.
 * Every member gets the same membership, or an error (chorusRemoteError,
 * chorusTimeout) when it cannot be agreed, e.g. the lowest survivor dies
 * after answering; the call then may be retried on `comm`. A live rank that
 * was left out (it called too late) never forms a communicator of its own:
 * it gets chorusRemoteError naming the ranks that went on without it, now
 * and on every later shrink of `comm`. For that the members keep `comm`'s
 * small recovery listener (and one thread answering it) open while they
 * hold the new communicator or one made from it, also after destroying
 * `comm`. Live ranks that do not take part (stopped, hung, late, or on a
 * host that cannot be reached) are left out only by a majority: the members
 * must be more than half of the ranks whose processes are not known to be
 * gone (exactly half if they include the lowest of those); otherwise the
 * call ends with chorusTimeout naming the absent ranks (end those
 * processes, or let them call shrink too). So two groups can never both
 * form, not even on the two sides of a network partition. A rank counts as
 * gone when its host refuses a connection to it (its process has exited).
 * Every wait is bounded: the agreement by the timeout, the new
 * communicator's creation by the timeout again. Collective over the
 * survivors; one shrink at a time per communicator.
 */
chorusResult_t chorusCommShrink(chorusComm_t comm, chorusComm_t* newcomm);

/** As chorusCommShrink with explicit configuration for the new communicator
 *  and the shrink's own deadline (config may be NULL). */
chorusResult_t chorusCommShrinkConfig(chorusComm_t comm, chorusComm_t* newcomm,
                                      chorusConfig_t* config);

/**
 * Fault tolerance, after ULFM's MPIX_Comm_revoke: makes every pending and
 * every later collective, point-to-point and group call on `comm` fail with
 * chorusRevoked, on this rank and on every other rank of `comm`, so that the
 * survivors of a failure stop waiting for their deadlines and can call
 * chorusCommShrink. Not collective: one rank calls it (several may, at
 * once), and it returns without waiting for the others. The notice reaches
 * the other ranks through the communicator's connections within
 * milliseconds on one host: a rank blocked in an operation returns
 * chorusRevoked then, an idle rank at its next call, with a message naming
 * the rank that revoked. Dead ranks are skipped; a stopped rank finds the
 * notice when it resumes. Revocation is ordered after what the revoking
 * rank had already sent: a call matching an operation it had started may
 * still complete on a rank that receives all it needs, and the call after
 * it fails. A rank that is in the middle of a message from the revoking
 * rank when the connection closes may get chorusRemoteError instead, as do
 * ranks on other hosts when `comm` had already failed here (its TCP
 * connections are closed by then; docs/architecture.md, "Fault tolerance:
 * revoke"). `comm` stays valid for chorusCommShrink, chorusCommAbort,
 * chorusCommDestroy, chorusCommGetAsyncError (chorusRevoked unless it had
 * failed before), chorusCommCount and chorusCommUserRank. Idempotent, and
 * safe while other threads are in operations on `comm`. Returns
 * chorusTimeout only if an operation in flight on this rank did not stop
 * within the timeout.
 */
chorusResult_t chorusCommRevoke(chorusComm_t comm);

/** Waits for all operations issued on `comm` to finish (collective-free). */
chorusResult_t chorusCommFinalize(chorusComm_t comm);

/** Frees `comm` after waiting for its pending operations. */
chorusResult_t chorusCommDestroy(chorusComm_t comm);

/**
 * Aborts `comm`: every pending operation on it fails quickly with
 * chorusRemoteError, then its resources are freed. Safe to call while
 * another thread is blocked in an operation on `comm`. The handle stays a
 * small tombstone: later calls with it return chorusInvalidUsage (the same
 * holds after chorusCommDestroy).
 */
chorusResult_t chorusCommAbort(chorusComm_t comm);

/** Writes the first asynchronous error seen on `comm` (chorusSuccess if none). */
chorusResult_t chorusCommGetAsyncError(chorusComm_t comm,
                                       chorusResult_t* asyncError);

/**
 * Writes `comm`'s flight recorder to `path`: a JSON-lines file, one header
 * line (rank, nranks, host, pid, communicator hash, wall-clock anchor) then
 * one line per recorded operation, oldest first (sequence number, call,
 * count, datatype, op, root or peer, algorithm, state, times, and for a
 * failure what it waited for and why it failed). NULL `path`: the file
 * CHORUS_TRACE_FILE names (%h host, %p pid, %r rank). Safe while another
 * thread is blocked in an operation on `comm`, and on a failed `comm`.
 * Returns chorusInvalidArgument when the file cannot be created (or no path
 * is given and CHORUS_TRACE_FILE is unset), chorusInvalidUsage when the
 * recorder is off (CHORUS_TRACE_BUFFER=0). `chorus_trace` merges the dumps
 * of all ranks (docs/debugging.md).
 */
chorusResult_t chorusCommDumpTrace(chorusComm_t comm, const char* path);

/**
 * Registers `size` bytes at `buff` with `comm`, as NCCL's ncclCommRegister:
 * collectives and sends/receives on `comm` whose buffers lie inside a
 * registered range let a transport that moves registered memory directly
 * (ibverbs: RDMA writes straight from the send buffer into the receive
 * buffer, no staging copy on either side) use it; other transports need
 * nothing and ignore it. Registering is optional and never changes results.
 * The memory must stay allocated until chorusCommDeregister. `*handle`
 * names the registration. A deregistration while an operation uses the
 * buffer takes effect when the operation ends.
 * chorusInvalidArgument: `buff` or `handle` NULL, `size` 0;
 * chorusSystemError: the transport cannot register the range (ibverbs:
 * ibv_reg_mr failed, e.g. over the locked-memory limit; the message says).
 */
chorusResult_t chorusCommRegister(const chorusComm_t comm, void* buff, size_t size, void** handle);
/** Releases a registration of chorusCommRegister; chorusInvalidArgument
 *  for a handle that is not one of `comm` (or was deregistered already). */
chorusResult_t chorusCommDeregister(const chorusComm_t comm, void* handle);

/**
 * Allocates `size` bytes of host memory that ranks in other processes on
 * this host read in place, as NCCL's ncclMemAlloc does for device memory: a
 * message of 64 KiB or more sent from it over shared memory costs the
 * receiver one copy (or one reduction) straight out of it instead of two
 * through the transport's ring. Page-aligned, contents undefined; any
 * buffer works with every call, this one is only faster. Communicators
 * made after the first call and those made before both see it (the heap
 * exists from the first of either). Blocks that exist at a fork stay valid
 * in parent and child (each keeps its own copy, as fork promises) but are
 * read in place no more; later blocks come from a fresh heap, which
 * communicators made after the fork share.
 * chorusInvalidArgument: `ptr` NULL or `size` 0; chorusSystemError: no
 * shared heap (CHORUS_SHARED_HEAP=0, the system refused memfd, the heap is
 * full, or the process forked too often).
 */
chorusResult_t chorusMemAlloc(void** ptr, size_t size);
/** Frees memory of chorusMemAlloc; chorusInvalidArgument for any other
 *  pointer: nothing is done and, so that an allocator may ask on its free
 *  path, nothing is logged or kept as the last error. */
chorusResult_t chorusMemFree(void* ptr);
/** `*size`: the usable bytes of a block of chorusMemAlloc (`size` rounded
 *  up to whole pages); chorusInvalidArgument, quietly as chorusMemFree,
 *  for any other pointer. */
chorusResult_t chorusMemGetSize(const void* ptr, size_t* size);

chorusResult_t chorusCommCount(const chorusComm_t comm, int* count);
chorusResult_t chorusCommUserRank(const chorusComm_t comm, int* rank);

/** A static description of a result code. */
const char* chorusGetErrorString(chorusResult_t result);

/**
 * The message of the last error on `comm` in this process, or of the last
 * error not tied to a communicator (init, invalid handles) when comm is
 * NULL. Empty string when there was none.
 */
const char* chorusGetLastError(chorusComm_t comm);

/* ---- Collectives ----------------------------------------------------- */
/*
 * Buffers may be NULL when the count is 0 (nothing is read or written), and
 * where NCCL ignores them: sendbuff on non-roots of Broadcast/Scatter,
 * recvbuff on non-roots of Reduce/Gather. Other overlaps than the in-place
 * layouts below are rejected with chorusInvalidArgument.
 */

chorusResult_t chorusAllReduce(const void* sendbuff, void* recvbuff,
                               size_t count, chorusDataType_t datatype,
                               chorusRedOp_t op, chorusComm_t comm,
                               chorusStream_t stream);

chorusResult_t chorusBroadcast(const void* sendbuff, void* recvbuff,
                               size_t count, chorusDataType_t datatype,
                               int root, chorusComm_t comm,
                               chorusStream_t stream);

/** Result lands in recvbuff on `root` only; recvbuff ignored elsewhere. */
chorusResult_t chorusReduce(const void* sendbuff, void* recvbuff,
                            size_t count, chorusDataType_t datatype,
                            chorusRedOp_t op, int root, chorusComm_t comm,
                            chorusStream_t stream);

/** recvbuff holds nranks*sendcount; in place when sendbuff == recvbuff + rank*sendcount. */
chorusResult_t chorusAllGather(const void* sendbuff, void* recvbuff,
                               size_t sendcount, chorusDataType_t datatype,
                               chorusComm_t comm, chorusStream_t stream);

/** sendbuff holds nranks*recvcount; in place when recvbuff == sendbuff + rank*recvcount. */
chorusResult_t chorusReduceScatter(const void* sendbuff, void* recvbuff,
                                   size_t recvcount, chorusDataType_t datatype,
                                   chorusRedOp_t op, chorusComm_t comm,
                                   chorusStream_t stream);

/** Block j of sendbuff goes to rank j; block i of recvbuff comes from rank i (count each). */
chorusResult_t chorusAlltoAll(const void* sendbuff, void* recvbuff,
                              size_t count, chorusDataType_t datatype,
                              chorusComm_t comm, chorusStream_t stream);

/** Root's recvbuff holds nranks*sendcount (in place as AllGather). */
chorusResult_t chorusGather(const void* sendbuff, void* recvbuff,
                            size_t sendcount, chorusDataType_t datatype,
                            int root, chorusComm_t comm,
                            chorusStream_t stream);

/** Root's sendbuff holds nranks*recvcount (in place as ReduceScatter). */
chorusResult_t chorusScatter(const void* sendbuff, void* recvbuff,
                             size_t recvcount, chorusDataType_t datatype,
                             int root, chorusComm_t comm,
                             chorusStream_t stream);

/* ---- Point to point -------------------------------------------------- */

/**
 * Messages between a pair of ranks match in issue order. A send to oneself
 * is allowed inside a group that also holds the matching receive from
 * oneself (same order, same size); it becomes a local copy.
 */
chorusResult_t chorusSend(const void* sendbuff, size_t count,
                          chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream);
chorusResult_t chorusRecv(void* recvbuff, size_t count,
                          chorusDataType_t datatype, int peer,
                          chorusComm_t comm, chorusStream_t stream);

/**
 * Group calls: operations issued by this thread between GroupStart and
 * GroupEnd are launched together at GroupEnd, so sends and receives posted
 * in any order never deadlock. Groups nest; the outermost End launches.
 */
chorusResult_t chorusGroupStart(void);
chorusResult_t chorusGroupEnd(void);

/**
 * Creates a reduction op computing sum(scalar * x_i). The scalar has
 * `datatype`; with chorusScalarDevice it is read at each call.
 */
chorusResult_t chorusRedOpCreatePreMulSum(chorusRedOp_t* op, void* scalar,
                                          chorusDataType_t datatype,
                                          chorusScalarResidence_t residence,
                                          chorusComm_t comm);
chorusResult_t chorusRedOpDestroy(chorusRedOp_t op, chorusComm_t comm);

/**
 * Where `pointer` lives, as every call classifies its buffers: in a build
 * without CUDA, or a process without a CUDA driver or device, always
 * chorusMemoryHost. chorusInvalidArgument when `kind` is NULL.
 */
chorusResult_t chorusPointerGetMemoryKind(const void* pointer, chorusMemoryKind_t* kind);

/* ---- Host streams ---------------------------------------------------- */

/** A host stream: an in-order queue served by its own worker thread. */
chorusResult_t chorusStreamCreate(chorusStream_t* stream);
/**
 * Waits for everything enqueued; returns the first failure since the last
 * Synchronize (and clears it), else chorusSuccess.
 */
chorusResult_t chorusStreamSynchronize(chorusStream_t stream);
/**
 * chorusSuccess when idle, chorusInProgress when work is pending, or the
 * first failure (kept: the next Synchronize still returns it).
 */
chorusResult_t chorusStreamQuery(chorusStream_t stream);
/**
 * Waits for pending work, then frees the stream. A stream made by
 * chorusStreamFromCuda also waits (at most CHORUS_TIMEOUT_MS) until its CUDA
 * stream has reached the end of the work it queued there.
 */
chorusResult_t chorusStreamDestroy(chorusStream_t stream);
/**
 * A host stream ordered with the CUDA stream `cuda_stream` (a cudaStream_t
 * passed as void*, so that this header needs no CUDA header; NULL is the
 * legacy default stream), as NCCL orders its calls on a CUDA stream: every
 * call enqueued on it (collective, send, receive, event record) starts after
 * the CUDA work queued on `cuda_stream` before the call, and CUDA work
 * queued on `cuda_stream` after the call waits until it has run. The caller
 * is never blocked; no CPU thread blocks for the GPU either (the CUDA stream
 * waits on a host-written flag, cuStreamWaitValue32). A call waits at most
 * CHORUS_TIMEOUT_MS (read here) for the earlier CUDA work, then fails with
 * chorusTimeout; a failed call still releases the CUDA stream, and its error
 * is reported by chorusStreamSynchronize/Query and the call's events.
 * Destroy it with chorusStreamDestroy before destroying `cuda_stream` (for
 * cudaStreamPerThread, from the thread whose stream it is).
 * chorusInvalidUsage in a build without CUDA; chorusSystemError, naming
 * CUDA's reason, where the runtime cannot link the streams (no CUDA driver,
 * no device, or a device without stream memory operations).
 */
chorusResult_t chorusStreamFromCuda(chorusStream_t* stream, void* cuda_stream);

/* ---- Events ---------------------------------------------------------- */
/*
 * CUDA-style events on host streams: per-operation completion for callers
 * that keep several operations in flight on one stream (a framework's
 * asynchronous work handles, futures). An event recorded on a stream
 * completes once everything enqueued on that stream before the record has
 * run. Its result is the stream's first failure not yet cleared by
 * chorusStreamSynchronize, so a failed operation makes every later event of
 * its stream report the failure (CUDA's sticky errors); the failure's
 * message is then also chorusGetLastError(NULL) of the calling thread.
 * Recording again moves the event: queries and waits refer to the latest
 * record made before them. An event never recorded counts as complete.
 * Every wait is bounded, since every operation before the event is bounded
 * by its communicator's timeout.
 */

/** Creates an event (never recorded, hence complete). */
chorusResult_t chorusEventCreate(chorusEvent_t* event);
/**
 * Places `event` after the work enqueued on `stream` so far. With the NULL
 * stream (whose calls block) the event completes at once.
 */
chorusResult_t chorusEventRecord(chorusEvent_t event, chorusStream_t stream);
/**
 * chorusSuccess when the recorded work has run, chorusInProgress while it is
 * pending, or the failure the event completed with.
 */
chorusResult_t chorusEventQuery(chorusEvent_t event);
/** Waits for the recorded work; returns what chorusEventQuery would then. */
chorusResult_t chorusEventSynchronize(chorusEvent_t event);
/**
 * Makes later work on `stream` wait until `event`'s latest record has
 * completed, without blocking the caller. If the awaited work failed,
 * `stream` reports that failure too. With the NULL stream it waits here, as
 * chorusEventSynchronize. An event never recorded makes nothing wait.
 */
chorusResult_t chorusStreamWaitEvent(chorusStream_t stream, chorusEvent_t event);
/** Frees `event`; safe while a record of it is still pending on a stream. */
chorusResult_t chorusEventDestroy(chorusEvent_t event);

#ifdef __cplusplus
}  // extern "C"
#endif

/* The explicit non-exact collectives (gossip, compressed allreduce). */
#include "chorus_lossy.h"

#endif  // CHORUS_CHORUS_H_
