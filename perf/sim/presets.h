// The papers' tables: FireCaffe's parameter server vs reduction tree,
// Pipe-SGD's pipelined iteration, GossipGraD's constant per-step cost.
#pragma once

#include <string>

#include "base/status.h"
#include "sim_flags.h"

namespace chorus::sim {

// Sets the preset's defaults in `flags` (the command line may override them
// afterwards). Unknown name -> InvalidArgument.
Status ApplyPresetDefaults(const std::string& preset, SimFlags* flags);

Status RunPreset(const SimFlags& flags);

}  // namespace chorus::sim
