// What the flight recorder costs per launch, alone in one thread
// (core/flight_recorder.h): the four calls a lone allreduce on the board
// makes (begin, path, start, end), over the default ring of 256 entries
// and over a ring of one entry that stays in the cache, beside the two
// clock reads they contain. The cost on a real call's critical path is
// measured with all_reduce_perf (docs/debugging.md, "Cost").
#include <benchmark/benchmark.h>

#include "core/flight_recorder.h"

namespace chorus {
namespace {

Operation LoneAllReduce() {
  Operation op;
  op.kind = Operation::Kind::kCollective;
  op.args.coll = Collective::kAllReduce;
  op.args.count = 2;
  return op;
}

void BM_RecordLaunch(benchmark::State& state) {
  FlightRecorder recorder(TraceIdentity{}, static_cast<size_t>(state.range(0)), "");
  const Operation op = LoneAllReduce();
  const Status ok = Status::Ok();
  for (auto _ : state) {
    recorder.BeginLaunch(&op, 1);
    recorder.MarkStarted(/*read_clock=*/false);
    recorder.SetStaticPath(0, "board");
    recorder.EndLaunch(ok, nullptr);
  }
}
BENCHMARK(BM_RecordLaunch)->Arg(256)->Arg(1);

// The two reads of the tick-resolution clock each launch makes.
void BM_TwoClockReads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(FlightRecorder::NowNs());
    benchmark::DoNotOptimize(FlightRecorder::NowNs());
  }
}
BENCHMARK(BM_TwoClockReads);

}  // namespace
}  // namespace chorus

BENCHMARK_MAIN();
