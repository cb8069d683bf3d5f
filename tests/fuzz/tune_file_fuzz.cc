// CHORUS_TUNE_FILE: ParseTuneText (ReadTuneFile's parse step) on any text.
#include <cmath>
#include <string>

#include "core/tuner.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string text(reinterpret_cast<const char*>(data), size);
  TunerModel model;
  model.chunk_bytes = 512 * 1024;
  model.source = "before";
  if (!ParseTuneText(text, "fuzz.tune", &model).ok()) {
    FUZZ_CHECK(model.source == "before");  // bad input writes nothing
    return 0;
  }
  // A valid file gives a usable model: positive, finite costs.
  FUZZ_CHECK(model.source == "fuzz.tune" && model.chunk_bytes == 512 * 1024);
  FUZZ_CHECK(model.alpha_s > 0 && std::isfinite(model.alpha_s));
  FUZZ_CHECK(model.beta_s_per_byte > 0 && std::isfinite(model.beta_s_per_byte));
  FUZZ_CHECK(model.gamma_s_per_byte >= 0 && std::isfinite(model.gamma_s_per_byte));
  FUZZ_CHECK(model.cached_gamma_s_per_byte >= 0 && std::isfinite(model.cached_gamma_s_per_byte));
  FUZZ_CHECK(model.overhead_s > 0 && std::isfinite(model.overhead_s));
  return 0;
}
