// The sweep behind chorus_sim's default table: for each rank count and
// algorithm, simulate and print time, busbw and the busiest link.
#pragma once

#include <string>

#include "algorithms/algorithm.h"
#include "base/status.h"
#include "model/cluster_model.h"
#include "sim/simulator.h"
#include "sim_flags.h"

namespace chorus::sim {

// The cluster of `nranks` ranks that the flags describe.
Status ClusterFor(const SimFlags& flags, int nranks, ClusterModel* cluster);

// Simulates one point; `seconds` < 0 when the algorithm cannot run it.
Status SimulatePoint(const SimFlags& flags, Algorithm algo, int nranks, SimResult* result);

// "12.3 ms", "850 us", "1.20 s".
std::string FormatSeconds(double seconds);
// "30.0 MiB".
std::string FormatBytes(double bytes);

Status PrintSweep(const SimFlags& flags);

}  // namespace chorus::sim
