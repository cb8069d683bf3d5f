#include "interpose/mpi/comm_registry.h"

#include <dirent.h>
#include <sys/resource.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "interpose/mpi/report.h"

namespace chorus_mpi {
namespace {

std::atomic<int> live_chorus_comms{0};  // entries with a Chorus communicator

// Entries still alive, so that MPI_Finalize can delete the attributes of
// communicators the program never freed.
std::mutex live_mutex;
std::unordered_set<CommEntry*>* live = new std::unordered_set<CommEntry*>();

// Entries destroyed so far: a thread's cached lookup (below) is valid while
// this is unchanged, since an MPI handle may be reused once freed.
std::atomic<uint64_t> entries_destroyed{0};

// The communicator this thread looked up last and its entry: a program's
// calls mostly go to one communicator, and PMPI_Comm_get_attr is a hash
// lookup. Initial-exec: a plain load off the thread pointer.
struct LastLookup {
  MPI_Comm comm;
  CommEntry* entry;  // nullptr: nothing cached
  uint64_t destroyed;
};
__attribute__((tls_model("initial-exec"))) thread_local LastLookup last_lookup = {};

void DestroyEntry(CommEntry* entry) {
  entries_destroyed.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    live->erase(entry);
  }
  if (entry->stream != nullptr) chorusStreamDestroy(entry->stream);  // waits for pending work
  if (entry->comm != nullptr) {
    chorusCommDestroy(entry->comm);
    live_chorus_comms.fetch_sub(1);
  }
  delete entry;
}

int DeleteCallback(MPI_Comm, int, void* value, void*) {
  DestroyEntry(static_cast<CommEntry*>(value));
  return MPI_SUCCESS;
}

int keyval = MPI_KEYVAL_INVALID;

// Made at the first call (after MPI_Init). A function-local static, not
// std::call_once, which writes two thread-locals on every call.
int Keyval() {
  static const int made = [] {
    // MPI_COMM_NULL_COPY_FN: a duplicate gets its own Chorus communicator.
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, DeleteCallback, &keyval, nullptr) != MPI_SUCCESS) {
      keyval = MPI_KEYVAL_INVALID;
    }
    return keyval;
  }();
  return made;
}

// Why a rank would rather not make a Chorus communicator; the ranks agree
// on the largest (kWilling: everyone tries).
enum Refusal { kWilling = 0, kCommLimit = 1, kFewDescriptors = 2 };

const char* RefusalReason(int refusal) {
  switch (refusal) {
    case kCommLimit: return "CHORUS_MPI_MAX_COMMS Chorus communicators alive";
    case kFewDescriptors: return "too few file descriptors left for a Chorus communicator";
    default: return "Chorus communicator creation failed";
  }
}

// Whether `needed` more descriptors fit under RLIMIT_NOFILE.
bool DescriptorsLeft(int needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return true;
  long open = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++open;
    closedir(dir);
  }
  return open + needed <= static_cast<long>(limit.rlim_cur);
}

int LocalRefusal(int size) {
  if (live_chorus_comms.load() >= MaxComms()) return kCommLimit;
  if (!DescriptorsLeft(16 + 4 * size)) return kFewDescriptors;  // TCP lanes per peer, listener, epoll
  return kWilling;
}

struct IdMessage {
  int ok;
  chorusUniqueId id;
};

// Collective over `comm`: every rank gets a working communicator or none
// (and the same *reason when none).
chorusComm_t CreateChorusComm(MPI_Comm comm, CommEntry* entry, const char** reason) {
  // The ranks agree to try, which also has everyone here before rank 0's
  // rendezvous starts its deadline: a rank that could not even start would
  // leave the others waiting in chorusCommInitRank.
  *reason = RefusalReason(kWilling);
  int refusal = LocalRefusal(entry->size), agreed = kWilling;
  if (PMPI_Allreduce(&refusal, &agreed, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return nullptr;
  if (agreed != kWilling) {
    *reason = RefusalReason(agreed);
    return nullptr;
  }
  IdMessage message;
  std::memset(&message, 0, sizeof(message));
  if (entry->rank == 0) message.ok = chorusGetUniqueId(&message.id) == chorusSuccess;
  if (PMPI_Bcast(&message, sizeof(message), MPI_BYTE, 0, comm) != MPI_SUCCESS) return nullptr;
  chorusComm_t chorus_comm = nullptr;
  int ok = 0;
  if (message.ok) {
    chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
    config.timeoutMs = TimeoutMs();
    config.netName = entry->name.c_str();
    ok = chorusCommInitRankConfig(&chorus_comm, entry->size, message.id, entry->rank, &config) == chorusSuccess;
    if (!ok) {
      LogWarn("rank %d of %s: Chorus communicator creation failed: %s", entry->rank, entry->name.c_str(),
              chorusGetLastError(nullptr));
      chorus_comm = nullptr;
    }
  }
  int all_ok = 0;
  if (PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all_ok = 0;
  if (!all_ok && chorus_comm != nullptr) {
    chorusCommAbort(chorus_comm);
    chorus_comm = nullptr;
  }
  if (chorus_comm != nullptr) live_chorus_comms.fetch_add(1);
  return chorus_comm;
}

CommEntry* MakeEntry(MPI_Comm comm) {
  auto* entry = new CommEntry();
  entry->mpi_comm = comm;
  char name[MPI_MAX_OBJECT_NAME] = "";
  int length = 0;
  PMPI_Comm_get_name(comm, name, &length);
  entry->name = length > 0 ? name : "communicator";
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    entry->unusable_reason = "inter-communicator";
    return entry;
  }
  PMPI_Comm_rank(comm, &entry->rank);
  PMPI_Comm_size(comm, &entry->size);
  if (entry->size < 2) {
    entry->unusable_reason = "single-rank communicator";
    return entry;
  }
  const char* reason = nullptr;
  entry->comm = CreateChorusComm(comm, entry, &reason);
  if (entry->comm == nullptr) {
    entry->unusable_reason = reason;
    if (entry->rank == 0) {
      if (reason == RefusalReason(kWilling)) LogWarn("%s: %s; its calls pass to MPI", entry->name.c_str(), reason);
      else LogInfo("%s: %s; its calls pass to MPI", entry->name.c_str(), reason);
    }
  } else {
    NoteCommCreated();
    LogInfo("rank %d of %s: Chorus communicator of %d ranks created", entry->rank, entry->name.c_str(), entry->size);
  }
  return entry;
}

// The entry cached on `comm`, made on first use; nullptr with *reason set
// when there is none.
CommEntry* LookUp(MPI_Comm comm, const char** reason) {
  const int key = Keyval();
  if (key == MPI_KEYVAL_INVALID) {
    *reason = "no MPI attribute key";
    return nullptr;
  }
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, key, &value, &found) != MPI_SUCCESS) {
    *reason = "invalid communicator";
    return nullptr;
  }
  auto* entry = static_cast<CommEntry*>(value);
  if (!found) {
    entry = MakeEntry(comm);
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live->insert(entry);
    }
    if (PMPI_Comm_set_attr(comm, key, entry) != MPI_SUCCESS) {
      DestroyEntry(entry);
      *reason = "cannot cache the Chorus communicator";
      return nullptr;
    }
  }
  return entry;
}

}  // namespace

CommEntry* ChorusCommFor(MPI_Comm comm, const char** reason) {
  LastLookup& last = last_lookup;
  CommEntry* entry = last.entry;
  const uint64_t destroyed = entries_destroyed.load(std::memory_order_acquire);
  if (entry == nullptr || last.comm != comm || last.destroyed != destroyed) {
    entry = LookUp(comm, reason);
    if (entry == nullptr) return nullptr;
    last = {comm, entry, destroyed};
  }
  if (entry->comm == nullptr) {
    *reason = entry->unusable_reason;
    return nullptr;
  }
  return entry;
}

chorusStream_t StreamOf(CommEntry* entry) {
  if (entry->stream == nullptr && chorusStreamCreate(&entry->stream) != chorusSuccess) entry->stream = nullptr;
  return entry->stream;
}

void DestroyAllComms() {
  if (keyval == MPI_KEYVAL_INVALID) return;
  std::vector<CommEntry*> entries;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    entries.assign(live->begin(), live->end());
  }
  // Deleting the attribute runs DeleteCallback, which destroys the entry.
  for (CommEntry* entry : entries) PMPI_Comm_delete_attr(entry->mpi_comm, keyval);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    entries.assign(live->begin(), live->end());  // any the delete did not reach
  }
  for (CommEntry* entry : entries) DestroyEntry(entry);
  PMPI_Comm_free_keyval(&keyval);
}

}  // namespace chorus_mpi
