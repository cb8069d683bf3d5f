// Where communicator handles come from: a unique id, a launcher's
// environment, a split or a shrink of another communicator; and what a
// handle adds to its Communicator (recovery listener, heartbeat, call
// checks, flight recorder). Assembling the Communicator itself (transports,
// rendezvous, calibration) is core/communicator_builder.h.
#pragma once

#include <memory>

#include "core/handles.h"

namespace chorus {

// Starts a rendezvous root on this process and describes it in `id`.
Status MakeUniqueId(chorusUniqueId* id);

// Settings from the environment, overridden by `config` (may be NULL).
Status ResolveOptions(const chorusConfig_t* config, CommOptions* options);

Status CreateComm(const chorusUniqueId& id, int nranks, int rank, const chorusConfig_t* config,
                  std::unique_ptr<chorusComm>* out);
// `lineage`: what the new communicator keeps of the one it is made from
// (LineageToKeep), or null.
Status CreateCommWithOptions(const UniqueIdContents& id, int nranks, int rank, const CommOptions& options,
                             std::unique_ptr<chorusComm>* out,
                             std::shared_ptr<RecoveryEndpoint> lineage = nullptr);
Status CreateCommFromEnvironment(const chorusConfig_t* config, std::unique_ptr<chorusComm>* out);
// Collective over `parent`; `out` stays empty for CHORUS_SPLIT_NOCOLOR.
Status SplitComm(chorusComm* parent, int color, int key, const chorusConfig_t* config,
                 std::unique_ptr<chorusComm>* out);
// Collective over the surviving ranks of `comm` (docs/architecture.md,
// "Fault tolerance"): a new communicator over the ranks that take part.
Status ShrinkComm(chorusComm* comm, const chorusConfig_t* config, std::unique_ptr<chorusComm>* out);

}  // namespace chorus
