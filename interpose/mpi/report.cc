#include "interpose/mpi/report.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "interpose/mpi/type_map.h"

namespace chorus_mpi {
namespace {

enum class Level { kNone, kWarn, kInfo };

// Read once, at the first call that needs them; never changed afterwards.
struct Settings {
  bool enabled = true;
  bool progress_helper = true;
  int max_comms = kDefaultMaxComms;
  Level level = Level::kWarn;
  int timeout_ms = kDefaultTimeoutMs;
  FILE* file = stderr;
  std::mutex mutex;  // keeps log lines whole and guards `logged`
  std::unordered_set<std::string> logged;

  Settings() {
    const char* mpi = std::getenv("CHORUS_MPI");
    enabled = mpi == nullptr || std::string(mpi) != "0";
    progress_helper = Env("CHORUS_MPI_PROGRESS") != "0";
    const std::string max = Env("CHORUS_MPI_MAX_COMMS");
    if (!max.empty()) max_comms = std::atoi(max.c_str());
    std::string debug = Env("CHORUS_DEBUG");
    for (char& c : debug) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (debug == "NONE") level = Level::kNone;
    else if (debug == "INFO" || debug == "TRACE") level = Level::kInfo;
    std::string subsys = Env("CHORUS_DEBUG_SUBSYS");
    if (!subsys.empty() && ("," + subsys + ",").find(",MPI,") == std::string::npos && level == Level::kInfo) {
      level = Level::kWarn;
    }
    const char* timeout = std::getenv("CHORUS_TIMEOUT_MS");
    if (timeout != nullptr && *timeout != '\0') {
      char* end = nullptr;
      long long value = std::strtoll(timeout, &end, 10);
      // libchorus rejects a bad value at communicator creation; pass it on.
      timeout_ms = (*end == '\0' && value > 0 && value < (1ll << 31)) ? static_cast<int>(value) : -1;
    }
    std::string path = Env("CHORUS_DEBUG_FILE");
    if (!path.empty()) {
      char host[256] = "host";
      gethostname(host, sizeof(host) - 1);
      std::string expanded;
      for (size_t i = 0; i < path.size(); ++i) {
        if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'h') { expanded += host; ++i; }
        else if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'p') { expanded += std::to_string(getpid()); ++i; }
        else expanded += path[i];
      }
      if (FILE* f = std::fopen(expanded.c_str(), "a")) file = f;
    }
  }

  static std::string Env(const char* name) {
    const char* value = std::getenv(name);
    return value == nullptr ? std::string() : std::string(value);
  }
};

Settings& Get() {
  static Settings* settings = new Settings();  // never destroyed: used until exit
  return *settings;
}

// Call counts per thread, so that a call adds to its own thread's counters
// with plain stores (no locked read-modify-write, no line shared between
// threads); the summary adds up every thread's. Each thread registers its
// counters once; the registry owns them, so a thread's counts outlive it.
struct ThreadCounters {
  std::atomic<unsigned long long> served_calls{0}, served_bytes{0};
  std::atomic<unsigned long long> passed_calls{0}, passed_bytes{0};
};

struct Counters {
  std::atomic<unsigned long long> comms{0};
  std::mutex mutex;  // guards `threads`
  std::vector<std::unique_ptr<ThreadCounters>> threads;

  ThreadCounters* Register() {
    std::lock_guard<std::mutex> lock(mutex);
    threads.push_back(std::make_unique<ThreadCounters>());
    return threads.back().get();
  }
  // Sum of `field` over every thread.
  unsigned long long Total(std::atomic<unsigned long long> ThreadCounters::*field) {
    std::lock_guard<std::mutex> lock(mutex);
    unsigned long long total = 0;
    for (const auto& counters : threads) total += ((*counters).*field).load(std::memory_order_relaxed);
    return total;
  }
};

Counters& Stats() {
  static Counters* counters = new Counters();  // never destroyed: used until exit
  return *counters;
}

// This thread's counters (initial-exec: a plain load off the thread
// pointer, where a dynamically initialised thread_local calls
// __tls_get_addr and checks a guard on every call).
__attribute__((tls_model("initial-exec"))) thread_local ThreadCounters* my_counters = nullptr;

ThreadCounters& MyCounters() {
  if (my_counters == nullptr) my_counters = Stats().Register();
  return *my_counters;
}

// Only this thread writes its counters: a load and a store, not an RMW.
void Add(std::atomic<unsigned long long>& counter, unsigned long long value) {
  counter.store(counter.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
}

void VLog(const char* level, const char* format, va_list args) {
  Settings& settings = Get();
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  char message[1024];
  std::vsnprintf(message, sizeof(message), format, args);
  std::lock_guard<std::mutex> lock(settings.mutex);
  std::fprintf(settings.file, "%s:%d chorus %s MPI %s\n", host, static_cast<int>(getpid()), level, message);
  std::fflush(settings.file);
}

std::string CommLabel(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return "MPI_COMM_NULL";
  char name[MPI_MAX_OBJECT_NAME] = "";
  int length = 0;
  PMPI_Comm_get_name(comm, name, &length);
  int size = 0;
  PMPI_Comm_size(comm, &size);
  char label[MPI_MAX_OBJECT_NAME + 64];
  if (length > 0) std::snprintf(label, sizeof(label), "%s (%d ranks)", name, size);
  else std::snprintf(label, sizeof(label), "communicator %p (%d ranks)", static_cast<void*>(comm), size);
  return label;
}

std::string Human(unsigned long long bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace

bool Enabled() { return Get().enabled; }
bool InfoEnabled() { return Get().level >= Level::kInfo; }
bool ProgressHelperEnabled() { return Get().progress_helper; }
int MaxComms() { return Get().max_comms; }
int TimeoutMs() { return Get().timeout_ms; }

void LogWarn(const char* format, ...) {
  if (Get().level < Level::kWarn) return;
  va_list args;
  va_start(args, format);
  VLog("WARN", format, args);
  va_end(args);
}

void LogInfo(const char* format, ...) {
  if (Get().level < Level::kInfo) return;
  va_list args;
  va_start(args, format);
  VLog("INFO", format, args);
  va_end(args);
}

const char* CallName(Call call) {
  switch (call) {
    case Call::kAllreduce: return "MPI_Allreduce";
    case Call::kBcast: return "MPI_Bcast";
    case Call::kReduce: return "MPI_Reduce";
    case Call::kAllgather: return "MPI_Allgather";
    case Call::kReduceScatterBlock: return "MPI_Reduce_scatter_block";
    case Call::kAlltoall: return "MPI_Alltoall";
    case Call::kGather: return "MPI_Gather";
    case Call::kScatter: return "MPI_Scatter";
    case Call::kBarrier: return "MPI_Barrier";
    case Call::kIallreduce: return "MPI_Iallreduce";
    case Call::kIbcast: return "MPI_Ibcast";
  }
  return "?";
}

void NoteCall(Call call, MPI_Comm comm, const Shape& shape, size_t bytes, const char* fallback_reason) {
  ThreadCounters& mine = MyCounters();
  if (fallback_reason == nullptr) {
    Add(mine.served_calls, 1);
    Add(mine.served_bytes, bytes);
  } else {
    Add(mine.passed_calls, 1);
    Add(mine.passed_bytes, bytes);
  }
  if (!InfoEnabled()) return;

  std::string what = CallName(call);
  what += " on " + CommLabel(comm);
  if (call != Call::kBarrier) {
    const TypeInfo* type = LookupType(shape.type);
    char count[64];
    std::snprintf(count, sizeof(count), ": %lld x ", shape.count);
    what += count;
    what += type != nullptr ? type->name : "derived datatype";
  }
  if (shape.op != MPI_OP_NULL) what += std::string(", ") + OpName(shape.op);
  if (shape.has_root) what += ", root " + std::to_string(shape.root);
  if (shape.in_place) what += ", MPI_IN_PLACE";
  what += fallback_reason == nullptr ? ": served by Chorus" : std::string(": passed to MPI (") + fallback_reason + ")";
  {
    Settings& settings = Get();
    std::lock_guard<std::mutex> lock(settings.mutex);
    if (!settings.logged.insert(what).second) return;
  }
  LogInfo("%s", what.c_str());
}

void NoteCommCreated() { Stats().comms.fetch_add(1, std::memory_order_relaxed); }

void LogSummary() {
  if (!InfoEnabled()) return;
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!Enabled()) {
    LogInfo("rank %d: CHORUS_MPI=0, every call passed to MPI unchanged", rank);
    return;
  }
  Counters& stats = Stats();
  LogInfo("rank %d: Chorus served %llu calls (%s), %llu calls (%s) passed to MPI; %llu Chorus communicators", rank,
          stats.Total(&ThreadCounters::served_calls), Human(stats.Total(&ThreadCounters::served_bytes)).c_str(),
          stats.Total(&ThreadCounters::passed_calls), Human(stats.Total(&ThreadCounters::passed_bytes)).c_str(),
          stats.comms.load());
}

}  // namespace chorus_mpi
