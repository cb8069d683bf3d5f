// CHORUS_ALGO: ParseAlgorithmSpec on any text.
#include <string>

#include "algorithms/algorithm.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string spec(reinterpret_cast<const char*>(data), size);
  AlgorithmTable table;
  table.forced.fill(Algorithm::kRing);
  const AlgorithmTable before = table;
  if (!ParseAlgorithmSpec(spec, &table).ok()) {
    FUZZ_CHECK(table.forced == before.forced);  // bad input writes nothing
    return 0;
  }
  for (Algorithm algo : table.forced) {
    FUZZ_CHECK(static_cast<size_t>(algo) < static_cast<size_t>(Algorithm::kCount));
    FUZZ_CHECK(AlgorithmName(algo) != std::string("unknown"));
  }
  return 0;
}
