// Launcher: turns validated calls into communicator launches, either now on
// the caller's thread (NULL stream), or on host streams; and holds the
// calling thread's group (chorusGroupStart/End) state.
#pragma once

#include <vector>

#include "core/handles.h"
#include "core/operation.h"

namespace chorus {

struct PendingCall {
  chorusComm* comm = nullptr;
  chorusStream* stream = nullptr;
  Operation op;
};

// Launches `call` now, or defers it when this thread is inside a group.
Status Submit(const PendingCall& call);

// Group nesting of the calling thread.
Status GroupStart();
Status GroupEnd();

// Launches calls as one unit: calls on the same communicator and stream form
// one launch (so group sends and receives cannot deadlock); launches of
// different communicators on one stream run concurrently.
Status LaunchTogether(const std::vector<PendingCall>& calls);

}  // namespace chorus
