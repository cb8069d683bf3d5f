// chorus_info: prints the library version, every CHORUS_* variable with its
// type, default, current value and help, and every algorithm with the
// collectives it serves; with --variables-markdown, the variables' table as
// Markdown (docs/tuning.md); with --tune, the tuner's whole decision table
// for a given cluster model; with --topology, this host's topology as a
// communicator created here would see it. The default output ends with
// what this build and process can do with GPU memory.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "algorithms/collective.h"
#include "base/algorithm_descriptor.h"
#include "base/config.h"
#include "chorus/chorus.h"
#include "chorus_build_config.h"
#include "algorithms/topology.h"
#include "core/board_allreduce.h"
#include "core/selection_table.h"
#include "core/tuner.h"
#include "topology/discovery.h"
#include "tools/variables_markdown.h"

namespace {

void Usage() {
  std::printf(
      "usage: chorus_info [--topology | --variables-markdown]\n"
      "       chorus_info [--tune [--ranks P] [--hosts H] [--alpha-us A] [--bandwidth-GBps B] [--gamma-GBps G]\n"
      "                   [--cached-gamma-GBps G] [--overhead-us O] [--intra-alpha-us A] [--intra-bandwidth-GBps B]\n"
      "                   [--chunk BYTES] [--shares-cores 1]]\n"
      "Prints the Chorus version, its environment variables and its algorithms; with --variables-markdown,\n"
      "the variables' table as Markdown (the one in docs/tuning.md); with --tune, the algorithm the tuner\n"
      "picks for each collective and size under that model, with every candidate's predicted time. The\n"
      "ranks sit on H hosts in contiguous blocks; alpha/bandwidth are the link class between hosts (within\n"
      "the host when H = 1), --intra-* the class within a host (default: the same), --overhead-us the cost\n"
      "of each extra message in flight (default: alpha / 4), --cached-gamma-GBps the reduction rate of calls\n"
      "of up to 64 KiB (default: --gamma-GBps). Then the communicator's selection table: per\n"
      "collective, the size ranges and what runs there (on one host with the shared-memory board;\n"
      "--shares-cores 1: as when the ranks outnumber the CPUs). --topology prints this host's packages, NUMA\n"
      "nodes, cores, PUs, L3 caches, devices with their NUMA node and this process's binding (hwloc;\n"
      "honours CHORUS_TOPO_FILE and CHORUS_TOPO_DUMP_FILE).\n");
}

// The algorithms CHORUS_ALGO names, from their descriptors.
void PrintAlgorithms() {
  std::printf("\nAlgorithms (CHORUS_ALGO names):\n");
  for (const chorus::AlgorithmDescriptor& algo : chorus::kAlgorithmDescriptors) {
    std::string collectives;
    for (size_t c = 0; c < chorus::kCollectiveCount; ++c) {
      const auto coll = static_cast<chorus::Collective>(c);
      if (!chorus::Supports(algo.id, coll)) continue;
      collectives += collectives.empty() ? "" : ", ";
      collectives += chorus::CollectiveName(coll);
    }
    if (algo.id == chorus::Algorithm::kAuto) collectives = "every collective";
    std::printf("  %-12s %s%s\n      %s\n", algo.name, collectives.c_str(),
                algo.single_host_only ? "; chosen by the tuner on one host only" : "", algo.description);
  }
}

// Whether device buffers are served here, and why not.
void PrintDeviceMemory() {
  std::printf("\nDevice memory:\n");
#if CHORUS_HAVE_CUDA
  chorusStream_t stream = nullptr;
  if (chorusStreamFromCuda(&stream, nullptr) == chorusSuccess) {
    chorusStreamDestroy(stream);
    std::printf("  CUDA: built with CUDA; a device is present: device buffers, chorusStreamFromCuda,\n"
                "  page-locked staging and the cuda_ipc transport (same-host peers, CHORUS_TRANSPORT=auto) are in use\n");
  } else {
    std::printf("  CUDA: built with CUDA, but %s\n", chorusGetLastError(nullptr));
  }
#else
  std::printf("  CUDA: this build has no CUDA support; every buffer is host memory\n");
#endif
}

int PrintTuneTable(int argc, char** argv) {
  chorus::TunerModel model;
  model.alpha_s = 20e-6;
  model.beta_s_per_byte = 1 / 1.25e9;
  model.gamma_s_per_byte = 1 / 10e9;
  model.chunk_bytes = 512 * 1024;
  model.source = "command line";
  int ranks = 8;
  int hosts = 1;
  bool shares_cores = false;
  double overhead_us = -1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const double value = std::atof(argv[i + 1]);
    if (value <= 0) {
      std::fprintf(stderr, "chorus_info: %s needs a positive value\n", flag.c_str());
      return 2;
    }
    if (flag == "--ranks") ranks = static_cast<int>(value);
    else if (flag == "--hosts") hosts = static_cast<int>(value);
    else if (flag == "--overhead-us") overhead_us = value;
    else if (flag == "--intra-alpha-us") model.intra_alpha_s = value * 1e-6;
    else if (flag == "--intra-bandwidth-GBps") model.intra_beta_s_per_byte = 1 / (value * 1e9);
    else if (flag == "--alpha-us") model.alpha_s = value * 1e-6;
    else if (flag == "--bandwidth-GBps") model.beta_s_per_byte = 1 / (value * 1e9);
    else if (flag == "--gamma-GBps") model.gamma_s_per_byte = 1 / (value * 1e9);
    else if (flag == "--cached-gamma-GBps") model.cached_gamma_s_per_byte = 1 / (value * 1e9);
    else if (flag == "--chunk") model.chunk_bytes = static_cast<size_t>(value);
    else if (flag == "--shares-cores") shares_cores = true;
    else {
      Usage();
      return 2;
    }
  }
  if (argc % 2 != 0) {
    Usage();
    return 2;
  }
  model.overhead_s = overhead_us > 0 ? overhead_us * 1e-6 : model.alpha_s * chorus::kOverheadPerAlpha;
  std::fputs(chorus::DescribeDecisions(model, ranks, hosts).c_str(), stdout);
  // The same contiguous blocks as DescribeDecisions.
  chorus::Topology topology;
  const int table_hosts = std::clamp(hosts, 1, ranks);
  for (int r = 0; r < ranks; ++r) topology.host_of_rank.push_back(static_cast<int>(int64_t{r} * table_hosts / ranks));
  chorus::SelectionInputs inputs;
  inputs.nranks = ranks;
  inputs.topology = &topology;
  inputs.model = model;
  const chorus::BoardAllReduce board(nullptr);  // its ranges only
  inputs.native = table_hosts == 1 ? &board : nullptr;  // one host over shared memory
  inputs.shares_cores = shares_cores;
  std::fputs(chorus::SelectionTable(inputs).Describe().c_str(), stdout);
  return 0;
}

int PrintTopology() {
  chorus::HostTopology topology;
  const chorus::Status status =
      chorus::DiscoverHostTopology(chorus::TopologyOptions::FromEnvironment(), &topology);
  if (!status.ok()) {
    std::fprintf(stderr, "chorus_info: %s\n", status.message().c_str());
    return 1;
  }
  if (!chorus::TopologyDiscoveryAvailable()) std::printf("built without hwloc: ");
  std::fputs(chorus::DescribeTopology(topology).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    Usage();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--tune") == 0) return PrintTuneTable(argc, argv);
  if (argc == 2 && std::strcmp(argv[1], "--topology") == 0) return PrintTopology();
  if (argc == 2 && std::strcmp(argv[1], "--variables-markdown") == 0) {
    std::fputs(chorus::VariablesMarkdown(chorus::AllEnvVars()).c_str(), stdout);
    return 0;
  }
  if (argc > 1) {
    Usage();
    return 2;
  }
  int version = 0;
  if (chorusGetVersion(&version) != chorusSuccess) return 1;
  std::printf("Chorus %d.%d.%d\n\nEnvironment variables:\n", version / 10000, version / 100 % 100, version % 100);
  for (const chorus::EnvVarSpec& spec : chorus::AllEnvVars()) {
    const char* current = std::getenv(spec.name);
    std::printf("  %-22s %-7s default '%s'%s%s%s\n      %s\n", spec.name, spec.type, spec.default_value,
                current ? ", set to '" : "", current ? current : "", current ? "'" : "", spec.help);
  }
  PrintAlgorithms();
  PrintDeviceMemory();
  return 0;
}
