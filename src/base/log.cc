#include "base/log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "base/config.h"

namespace chorus {
namespace {

// Logging configuration is fixed at first use and never changes afterwards:
// immutable process-wide state, the one place the environment is read once.
struct LogSink {
  LogLevel level = LogLevel::kWarn;
  std::string subsystems;  // ",A,B," or empty for all
  FILE* file = stderr;
  std::mutex mutex;        // keeps lines whole across threads

  LogSink() {
    std::string text = EnvValue("CHORUS_DEBUG");
    for (char& c : text) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    if (text == "NONE") level = LogLevel::kNone;
    else if (text == "INFO") level = LogLevel::kInfo;
    else if (text == "TRACE") level = LogLevel::kTrace;
    else level = LogLevel::kWarn;
    std::string subsys = EnvValue("CHORUS_DEBUG_SUBSYS");
    if (!subsys.empty()) subsystems = "," + subsys + ",";
    std::string path = EnvValue("CHORUS_DEBUG_FILE");
    if (!path.empty()) {
      std::string expanded;
      char host[256] = "host";
      gethostname(host, sizeof(host) - 1);
      for (size_t i = 0; i < path.size(); ++i) {
        if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'h') { expanded += host; ++i; }
        else if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'p') { expanded += std::to_string(getpid()); ++i; }
        else expanded += path[i];
      }
      if (FILE* f = std::fopen(expanded.c_str(), "a")) file = f;
    }
  }
};

LogSink& Sink() {
  static LogSink sink;
  return sink;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
    default: return "";
  }
}

}  // namespace

LogLevel CurrentLogLevel() { return Sink().level; }

bool LogSubsystemEnabled(const char* subsys) {
  const std::string& list = Sink().subsystems;
  return list.empty() || list.find("," + std::string(subsys) + ",") != std::string::npos;
}

void LogMessage(LogLevel level, const char* subsys, const std::string& message) {
  LogSink& sink = Sink();
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  std::lock_guard<std::mutex> lock(sink.mutex);
  std::fprintf(sink.file, "%s:%d chorus %s %s %s\n", host, static_cast<int>(getpid()), LevelName(level), subsys,
               message.c_str());
  std::fflush(sink.file);
}

}  // namespace chorus
