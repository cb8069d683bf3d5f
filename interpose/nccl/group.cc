#include "interpose/nccl/group.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chorus/chorus.h"
#include "interpose/nccl/last_error.h"

namespace chorus_nccl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<Creation> creations;
};

GroupState& ThisThreadGroup() {
  thread_local GroupState group;
  return group;
}

// Runs every creation on a thread of its own (they rendezvous with each
// other) and returns the first failure, with its message on this thread.
ncclResult_t RunCreations(std::vector<Creation>& creations) {
  if (creations.empty()) return ncclSuccess;
  if (creations.size() == 1) return creations[0]();
  std::vector<ncclResult_t> results(creations.size(), ncclSuccess);
  std::vector<std::string> messages(creations.size());
  std::vector<std::thread> threads;
  threads.reserve(creations.size());
  for (size_t i = 0; i < creations.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = creations[i]();
      if (results[i] != ncclSuccess) messages[i] = LastError();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < creations.size(); ++i) {
    if (results[i] == ncclSuccess) continue;
    SetLastError(messages[i]);
    return results[i];
  }
  return ncclSuccess;
}

}  // namespace

bool InGroup() { return ThisThreadGroup().depth > 0; }

void DeferCreation(Creation creation) { ThisThreadGroup().creations.push_back(std::move(creation)); }

ncclResult_t GroupStart() {
  ncclResult_t result = FromChorus(chorusGroupStart(), "ncclGroupStart");
  if (result == ncclSuccess) ++ThisThreadGroup().depth;
  return result;
}

ncclResult_t GroupEnd() {
  GroupState& group = ThisThreadGroup();
  if (group.depth == 0) return Fail(ncclInvalidUsage, "ncclGroupEnd", "no ncclGroupStart is open on this thread");
  if (--group.depth > 0) return FromChorus(chorusGroupEnd(), "ncclGroupEnd");
  std::vector<Creation> creations;
  creations.swap(group.creations);
  ncclResult_t created = RunCreations(creations);
  ncclResult_t launched = FromChorus(chorusGroupEnd(), "ncclGroupEnd");
  return created != ncclSuccess ? created : launched;
}

}  // namespace chorus_nccl
