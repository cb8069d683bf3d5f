// all_gather_perf: nccl-tests' all_gather_perf for chorus (flags: -h).
#include "perf/cli/launch.h"

int main(int argc, char** argv) { return chorus::perf::RunPerfMain(argc, argv, chorus::perf::CollectiveKind::kAllGather); }
