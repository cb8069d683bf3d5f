// Every CHORUS_* environment variable, declared once with type, default and
// help, and the typed settings a communicator reads from them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"

namespace chorus {

struct EnvVarSpec {
  const char* name;
  const char* type;           // "int", "bytes", "string", "level", "hex128"
  const char* default_value;  // as text
  const char* help;
};

// The one table (printed by `chorus_info`; `chorus_info --variables-markdown`
// writes it as the Markdown table of docs/tuning.md).
const std::vector<EnvVarSpec>& AllEnvVars();

// Value of a declared variable: the environment's if set, else its default.
// Asking for an undeclared name is a programming error (aborts in debug).
std::string EnvValue(const char* name);

// Parsers shared by the table's users. Sizes accept K/M/G suffixes.
Status ParseInt(const std::string& text, const char* what, long long* out);
Status ParseBytes(const std::string& text, const char* what, size_t* out);
Status ParseHex128(const std::string& text, const char* what, unsigned char out[16]);
// CHORUS_SHM_RING_BYTES: "0" or "auto" (0: automatic), or a multiple of 64
// in 256K..1G.
Status ParseShmRingBytes(const std::string& text, size_t* out);
// CHORUS_SOCKET_RCVBUF/SNDBUF (`name`): a size in 0..kMaxSocketBufferBytes
// (0: leave the kernel's autotuning alone).
constexpr int kMaxSocketBufferBytes = 0x7fffffff / 2;
Status ParseSocketBufferBytes(const std::string& text, const char* name, int* out);

// What a communicator takes from the environment at creation; chorusConfig_t
// fields override these.
struct Settings {
  int timeout_ms = 0;
  size_t chunk_bytes = 0;
  size_t device_chunk_bytes = 0;
  std::string algo;
  std::string socket_ifname;
  // CHORUS_TRANSPORT as written; the transport registry parses it and each
  // transport reads its own variables (transports/transport_registry.h).
  std::string transport;
  std::string tuner;      // "model" or "static"
  std::string tune_file;
  bool check_calls = false;   // CHORUS_CHECK=1
  size_t trace_buffer = 256;  // CHORUS_TRACE_BUFFER; 0: flight recorder off
  std::string trace_file;     // CHORUS_TRACE_FILE
  int heartbeat_ms = 0;       // CHORUS_HEARTBEAT_MS; 0: off (bootstrap/heartbeat.h)

  static Status FromEnvironment(Settings* out);
};

}  // namespace chorus
