// chorus_info: prints the library version and every CHORUS_* variable with
// its type, default, current value and help.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "chorus/chorus.h"

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf("usage: chorus_info\nPrints the Chorus version and its environment variables.\n");
    return 0;
  }
  int version = 0;
  chorusGetVersion(&version);
  std::printf("Chorus %d.%d.%d\n\nEnvironment variables:\n", version / 10000, version / 100 % 100, version % 100);
  for (const chorus::EnvVarSpec& spec : chorus::AllEnvVars()) {
    const char* current = std::getenv(spec.name);
    std::printf("  %-22s %-7s default '%s'%s%s%s\n      %s\n", spec.name, spec.type, spec.default_value,
                current ? ", set to '" : "", current ? current : "", current ? "'" : "", spec.help);
  }
  return 0;
}
