// Logging controlled by CHORUS_DEBUG / CHORUS_DEBUG_SUBSYS / CHORUS_DEBUG_FILE,
// read once per process. The level is checked before any formatting, so
// disabled logging costs one comparison.
#pragma once

#include <string>

#include "base/status.h"

namespace chorus {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

LogLevel CurrentLogLevel();
bool LogSubsystemEnabled(const char* subsys);
void LogMessage(LogLevel level, const char* subsys, const std::string& message);

}  // namespace chorus

#define CHORUS_LOG(level, subsys, ...)                                            \
  do {                                                                            \
    if (::chorus::CurrentLogLevel() >= (level) && ::chorus::LogSubsystemEnabled(subsys)) \
      ::chorus::LogMessage((level), (subsys), ::chorus::StrCat(__VA_ARGS__));     \
  } while (0)
#define CHORUS_WARN(subsys, ...) CHORUS_LOG(::chorus::LogLevel::kWarn, subsys, __VA_ARGS__)
#define CHORUS_INFO(subsys, ...) CHORUS_LOG(::chorus::LogLevel::kInfo, subsys, __VA_ARGS__)
#define CHORUS_TRACE(subsys, ...) CHORUS_LOG(::chorus::LogLevel::kTrace, subsys, __VA_ARGS__)
