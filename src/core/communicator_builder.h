// CommunicatorBuilder: how one rank's Communicator is assembled from the
// transport registry. The steps, in order: the rank's host topology, every
// selected transport created, the rendezvous (every rank's PeerInfo), the
// routes (per peer, the first selected transport that reaches it), the
// connections, the shm board where one transport serves every peer, and the
// tuner's calibration (a few collectives on the new communicator, or
// CHORUS_TUNE_FILE). Every step is collective and every rank decides alike
// from the same rendezvous table, so all ranks end with the same routes,
// board and model.
//
// Which communicator a handle gets (a unique id, the launcher's environment,
// a split or a shrink) and what the handle adds (recovery listener,
// heartbeat) is core/comm_factory.h's; this file is only the assembly.
#pragma once

#include <memory>

#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "core/communicator.h"

namespace chorus {

// Joins the communicator of `id` (collective over all nranks ranks).
Status BuildCommunicator(const UniqueIdContents& id, int rank, int nranks, const CommOptions& options,
                         std::unique_ptr<Communicator>* out);

}  // namespace chorus
