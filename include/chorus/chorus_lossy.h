/*
 * Chorus: the explicit non-exact collectives, part of the public C API
 * (chorus.h includes this file; it may also be included on its own).
 */
#ifndef CHORUS_CHORUS_LOSSY_H_
#define CHORUS_CHORUS_LOSSY_H_

#include "chorus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Explicit non-exact collectives --------------------------------- */
/*
 * Collectives that trade exactness for less traffic, for training methods
 * that tolerate it (docs/lossy.md). They are never chosen implicitly: the
 * caller asks for them by name. Like every collective they run in stream
 * order (NULL stream: blocking) and must be issued in the same order on every
 * rank. They launch at the call even inside chorusGroupStart/End (they are
 * not part of the group).
 */

/** Who talks to whom in chorusGossip (GossipGraD). */
typedef enum {
  /** partner = position XOR 2^h: send to and receive from the same rank. */
  chorusGossipCube = 0,
  /** send to position - 2^h, receive from position + 2^h (mod nranks). */
  chorusGossipDissemination = 1
} chorusGossipPartner_t;

/**
 * Caller-owned gossip schedule, the same on every rank. `step` counts calls
 * (chorusGossip increments it); h = step mod L with L = ceil(log2(nranks)).
 * With `rotate` != 0 ranks sit at positions of a permutation drawn from
 * (`seed`, step / L), a new one every L steps (splitmix64 + Fisher-Yates,
 * identical on every rank); partners are computed on positions.
 */
typedef struct {
  chorusGossipPartner_t partner;
  int rotate;
  unsigned long long seed;
  unsigned long long step;
} chorusGossipState_t;

#define CHORUS_GOSSIP_STATE_INITIALIZER \
  { chorusGossipCube, 0, 0ull, 0ull }

/**
 * One gossip step: recvbuff = 0.5 * sendbuff + 0.5 * (the partner's
 * sendbuff), floating types only (fp16, bf16, fp32, fp64; others:
 * chorusInvalidArgument). In place when sendbuff == recvbuff. With cube
 * partners and nranks a power of two, log2(nranks) consecutive calls
 * starting at a multiple of log2(nranks) leave every rank with the exact
 * average (up to rounding). When nranks is not a power of two, a cube rank
 * whose partner position is >= nranks keeps its own value for that step
 * (recvbuff = sendbuff); dissemination is defined for every nranks.
 */
chorusResult_t chorusGossip(const void* sendbuff, void* recvbuff, size_t count,
                            chorusDataType_t datatype,
                            chorusGossipState_t* state, chorusComm_t comm,
                            chorusStream_t stream);

/** Wire formats of chorusAllReduceCompressed (float32 data). */
typedef enum {
  /** result = sign(sum_i sign(x_i)) by AllGather of packed sign bits. */
  chorusCompressSignVote = 0,
  /** result = sign(sum_i q_i), q_i int8 L1-scaled to floor(127/nranks). */
  chorusCompressInt8 = 1,
  /** result = sum_i x_i with fp16 on the wire. */
  chorusCompressFp16 = 2,
  /** result = sum_i x_i with bfloat16 on the wire. */
  chorusCompressBf16 = 3,
  /** result = mean_i scale_i*sign(x_i+e_i), e_i kept as error feedback. */
  chorusCompressOneBitEF = 4,
  /** As SignVote, by an AllReduce of int8 vote counts (nranks <= 127). */
  chorusCompressSignVoteCounts = 5,
  chorusNumCompressions = 6
} chorusCompression_t;

/**
 * Per-communicator compression state: the mode, the error-feedback
 * residual and traffic counters. Use it with the communicator, count and
 * datatype it was created for, and from one stream at a time.
 */
typedef struct chorusCompressState* chorusCompressState_t;

/** Creates a state (residual zero, counters zero). Local, not collective. */
chorusResult_t chorusCompressStateCreate(chorusCompressState_t* state,
                                         chorusCompression_t mode,
                                         size_t count,
                                         chorusDataType_t datatype,
                                         chorusComm_t comm);
/** Frees a state; NULL is allowed. Synchronize its stream first. */
chorusResult_t chorusCompressStateDestroy(chorusCompressState_t state);

/**
 * Totals over the calls made with `state`: bytes this rank contributed to
 * the wire (its own payload, not the algorithm's forwarding) and the bytes an
 * uncompressed float32 AllReduce would have contributed (4 * count per call).
 * Either pointer may be NULL.
 */
chorusResult_t chorusCompressStateGetBytes(chorusCompressState_t state,
                                           unsigned long long* bytesOnWire,
                                           unsigned long long* bytesUncompressed);

/**
 * A compressed AllReduce of float32 data (other types:
 * chorusInvalidArgument); in place when sendbuff == recvbuff. The result
 * of each mode is documented on chorusCompression_t and in docs/lossy.md.
 * Signs: x < 0 votes -1, anything else (0, -0, NaN) +1; a tied vote is 0.
 */
chorusResult_t chorusAllReduceCompressed(const void* sendbuff, void* recvbuff,
                                         size_t count,
                                         chorusDataType_t datatype,
                                         chorusCompressState_t state,
                                         chorusComm_t comm,
                                         chorusStream_t stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CHORUS_CHORUS_LOSSY_H_
