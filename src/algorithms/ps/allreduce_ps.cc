// Central parameter-server AllReduce (the baseline of FireCaffe): every
// worker pushes its whole vector to one server rank, the server folds them
// in one after another, then every worker pulls the result. The server sends
// and receives (p-1)*|W| bytes, so the time grows linearly in p; it is here
// to reproduce that comparison, not to be fast. Steps are cut into
// args.segment_bytes segments, so pulls of segment s overlap pushes of s+1.
#include "algorithms/builders.h"
#include "algorithms/ps/parameter_server.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildParameterServerAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kParameterServer, out);
  const int p = args.nranks;
  const int server = CentralServerRank(args);
  const size_t bytes = args.count * builder.element_size();

  ForEachPipelineSegment(args.segment_bytes, builder.element_size(), bytes, [&](const ByteRange& part) {
    const BufferRange send{BufferId::kSend, part.offset};
    const BufferRange recv{BufferId::kRecv, part.offset};
    if (args.rank != server) {
      builder.Send(server, send, part.bytes);
      builder.Recv(server, recv, part.bytes);
      return;
    }
    BufferRange partial = send;
    for (int i = 1; i < p; ++i) {
      builder.Pace(builder.RecvReduce((server + i) % p, partial, recv, part.bytes));  // schedule.h rule 5
      partial = recv;
    }
    for (int i = 1; i < p; ++i) builder.Send((server + i) % p, recv, part.bytes);
  });
  return builder.Finish();
}

}  // namespace chorus
