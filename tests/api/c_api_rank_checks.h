/*
 * What one rank of c_api_program does: every call of the public C API on a
 * communicator of `nranks` forked processes, each result checked exactly.
 * Plain C, written only against chorus/chorus.h, as a user would.
 */
#ifndef CHORUS_TESTS_API_C_API_RANK_CHECKS_H_
#define CHORUS_TESTS_API_C_API_RANK_CHECKS_H_

#include "chorus/chorus.h"

/* The most ranks the program accepts (buffers are sized for it). */
#define C_API_MAX_RANKS 16

/*
 * Joins the communicator `id` as `rank` and runs every check. Returns 0 when
 * all passed, else non-zero after printing what was wrong to stderr.
 */
int RunRankChecks(const chorusUniqueId* id, int nranks, int rank);

#endif /* CHORUS_TESTS_API_C_API_RANK_CHECKS_H_ */
