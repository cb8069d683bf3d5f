#include "interpose/nccl/config.h"

#include <cstddef>
#include <string>

#include "interpose/nccl/last_error.h"

namespace chorus_nccl {
namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;  // NCCL_CONFIG_INITIALIZER's

// Configs of older nccl.h versions are shorter: read a field only when the
// caller's struct holds it.
template <typename Field>
bool Holds(const ncclConfig_t* config, const Field* field) {
  const size_t end = reinterpret_cast<const char*>(field) - reinterpret_cast<const char*>(config) + sizeof(Field);
  return config->size >= end;
}

}  // namespace

ncclResult_t MapConfig(const ncclConfig_t* config, const char* api, chorusConfig_t* out) {
  *out = CHORUS_CONFIG_INITIALIZER;
  if (config == nullptr) return ncclSuccess;
  if (config->magic != kConfigMagic || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
    return Fail(ncclInvalidArgument, api, "config is not initialised with NCCL_CONFIG_INITIALIZER");
  }
  if (Holds(config, &config->blocking) && config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1) {
      return Fail(ncclInvalidArgument, api,
                  "config blocking is " + std::to_string(config->blocking) + ", must be 0 or 1");
    }
    out->blocking = config->blocking;
  }
  if (Holds(config, &config->commName) && config->commName != NCCL_CONFIG_UNDEF_PTR) {
    out->netName = config->commName;
  }
  return ncclSuccess;
}

}  // namespace chorus_nccl
