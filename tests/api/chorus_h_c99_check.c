/*
 * Compile-only: chorus.h must build as strict C99 (-std=c99 -pedantic
 * -Werror), and its initializer, enums and prototypes must be usable from C.
 */
#include "chorus/chorus.h"

/* Referenced so that the static functions below are used. */
int ChorusHeaderIsC99(void);

static chorusResult_t InitWithConfig(chorusComm_t* comm, chorusUniqueId id) {
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  config.algo = "ring";
  return chorusCommInitRankConfig(comm, 2, id, 0, &config);
}

int ChorusHeaderIsC99(void) {
  chorusResult_t (*init)(chorusComm_t*, chorusUniqueId) = InitWithConfig;
  chorusResult_t (*group_end)(void) = chorusGroupEnd;
  chorusRedOp_t op = chorusAvg;
  chorusDataType_t dtype = chorusBfloat16;
  chorusScalarResidence_t residence = chorusScalarHostImmediate;
  return (init != 0) + (group_end != 0) + (int)op + (int)dtype + (int)residence + CHORUS_SPLIT_NOCOLOR +
         CHORUS_UNIQUE_ID_BYTES + (int)sizeof(chorusUniqueId) + CHORUS_VERSION_CODE + (int)chorusNumResults;
}
