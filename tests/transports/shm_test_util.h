// Helpers shared by the shm transport tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transports/shm/shm_transport.h"

namespace chorus {
namespace shm_test {

constexpr int kTestTimeoutMs = 20000;

inline TransportOptions Options(int rank, int nranks, uint8_t secret_seed = 1) {
  TransportOptions options;
  options.rank = rank;
  options.nranks = nranks;
  for (int i = 0; i < 16; ++i) options.secret[i] = static_cast<uint8_t>(5 * i + secret_seed);
  return options;
}

inline uint8_t Pattern(int from, int to, size_t index) {
  return static_cast<uint8_t>(from * 31 + to * 7 + index * 13 + (index >> 9));
}

inline void FillPattern(std::vector<uint8_t>* buffer, int from, int to, size_t salt) {
  for (size_t i = 0; i < buffer->size(); ++i) (*buffer)[i] = Pattern(from, to, i + salt);
}

// Number of bytes that differ from the pattern.
inline size_t CountWrong(const std::vector<uint8_t>& buffer, int from, int to, size_t salt) {
  size_t wrong = 0;
  for (size_t i = 0; i < buffer.size(); ++i) wrong += buffer[i] != Pattern(from, to, i + salt);
  return wrong;
}

// Drives Progress until every request is done.
inline Status WaitAll(Transport* transport, const std::vector<TransferRequest*>& requests,
                      int timeout_ms = kTestTimeoutMs) {
  const Deadline deadline = Deadline::AfterMs(timeout_ms);
  while (true) {
    bool all_done = true;
    for (const TransferRequest* request : requests) all_done = all_done && request->done;
    if (all_done) return Status::Ok();
    if (deadline.Expired()) return TimeoutError("test requests did not finish");
    CHORUS_RETURN_IF_ERROR(transport->Progress(10));
  }
}

inline TransferRequest Request(void* buffer, size_t bytes, uint64_t tag) {
  TransferRequest request;
  request.buffer = buffer;
  request.bytes = bytes;
  request.tag = tag;
  return request;
}

// "/chorus-shm-..." from an address, or "" when there is none.
inline std::string SegmentName(const std::string& address) {
  const size_t at = address.find("/chorus-shm-");
  if (at == std::string::npos) return "";
  return address.substr(at, address.find(' ', at) - at);
}

inline bool SegmentExists(const std::string& name) { return !name.empty() && std::ifstream("/dev/shm" + name).good(); }

}  // namespace shm_test
}  // namespace chorus
