// chorus_sim: replays Chorus schedules on a modelled cluster and prints the
// time, busbw and busiest link per rank count and algorithm, or a paper's
// table (--preset). See docs/simulator.md.
#include <cstdio>

#include "presets.h"
#include "sim_flags.h"
#include "sim_table.h"

int main(int argc, char** argv) {
  using namespace chorus::sim;
  SimFlags flags;
  chorus::Status status = ParseSimFlags(argc, argv, &flags);
  if (status.ok() && !flags.preset.empty()) {
    // Preset defaults first, then the command line again so it overrides them.
    const std::string preset = flags.preset;
    flags = SimFlags{};
    status = ApplyPresetDefaults(preset, &flags);
    if (status.ok()) status = ParseSimFlags(argc, argv, &flags);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "chorus_sim: %s\n%s", status.message().c_str(), SimUsage());
    return 2;
  }
  if (flags.help) {
    std::printf("%s", SimUsage());
    return 0;
  }
  status = flags.preset.empty() ? PrintSweep(flags) : RunPreset(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "chorus_sim: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
