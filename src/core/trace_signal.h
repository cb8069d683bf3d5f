// SIGUSR1 -> flight recorder dumps of every communicator of this process
// that records with CHORUS_TRACE_FILE set (core/flight_recorder.h).
//
// Why process-wide: a signal is delivered to the process, not to a
// communicator, and a process has one disposition per signal; so one
// handler and one list of the communicators to dump are unavoidable. The
// handler only writes a byte to a self-pipe (async-signal-safe: no I/O on
// files, no locks, no allocation); a dump thread started with the handler
// reads the pipe and writes the dumps outside signal context.
#pragma once

#include <cstdint>
#include <functional>

namespace chorus {

// Installs the handler and starts the dump thread once per process. The
// handler is installed only when SIGUSR1 still has its default disposition
// (a program's own handler is left alone, with a warning).
void InstallTraceSignalHandler();

// `dump` runs on the dump thread at each SIGUSR1 until the returned id is
// unregistered. Unregister waits for a dump in progress to finish.
uint64_t RegisterTraceDump(std::function<void()> dump);
void UnregisterTraceDump(uint64_t id);

// SIGUSR1s the dump thread has handled so far (tests wait on it).
uint64_t TraceSignalsHandled();

}  // namespace chorus
