// Central parameter-server Reduce: every rank pushes its vector to the root,
// which folds them in one after another (a flat tree): the root receives
// (p-1)*|W| bytes. Steps are cut into args.segment_bytes segments.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildParameterServerReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kParameterServer, out);
  const int p = args.nranks;
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange send{BufferId::kSend, part.offset};
    if (args.rank != args.root) {
      builder.Send(args.root, send, part.bytes);
      return;
    }
    const BufferRange recv{BufferId::kRecv, part.offset};
    BufferRange partial = send;
    for (int i = 1; i < p; ++i) {
      builder.Pace(builder.RecvReduce((args.root + i) % p, partial, recv, part.bytes));  // schedule.h rule 5
      partial = recv;
    }
  });
  return builder.Finish();
}

}  // namespace chorus
