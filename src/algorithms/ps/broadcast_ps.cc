// Central parameter-server Broadcast (the pull half of a parameter server):
// the root sends its vector to every other rank itself, (p-1)*|W| bytes out
// of one link. Steps are cut into args.segment_bytes segments.
#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildParameterServerBroadcast(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kParameterServer, out);
  const int p = args.nranks;
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange send{BufferId::kSend, part.offset};
    const BufferRange recv{BufferId::kRecv, part.offset};
    if (args.rank != args.root) {
      builder.Recv(args.root, recv, part.bytes);
      return;
    }
    for (int i = 1; i < p; ++i) builder.Send((args.root + i) % p, send, part.bytes);
    builder.Copy(send, recv, part.bytes);
  });
  return builder.Finish();
}

}  // namespace chorus
