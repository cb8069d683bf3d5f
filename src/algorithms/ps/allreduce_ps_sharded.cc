// Sharded parameter-server AllReduce (BytePS-style): k server ranks 0..k-1
// each own 1/k of the vector. Every rank pushes shard j to server j, server j
// folds in the p-1 pushes of its shard, then every rank pulls every shard
// from its server. With k = p each rank sends and receives 2(p-1)/p*|W|, like
// the ring, in 2 rounds of p-1 concurrent messages instead of 2(p-1) steps.
// Rounds are staggered (at round d rank i pushes to i+d and pulls from i-d)
// so no server is hit by everyone at once.
#include "algorithms/builders.h"
#include "algorithms/ps/parameter_server.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/segments.h"

namespace chorus {

Status BuildShardedParameterServerAllReduce(const CollectiveArgs& args, Schedule* out) {
  ScheduleBuilder builder(args, Algorithm::kShardedParameterServer, out);
  const int p = args.nranks;
  const int r = args.rank;
  const int servers = ShardServerCount(args);
  const size_t es = builder.element_size();
  auto shard = [&](int server) { return EvenSegment(args.count, servers, server); };
  auto at = [&](BufferId buffer, const Segment& s) { return BufferRange{buffer, s.offset * es}; };
  const bool is_server = r < servers;

  // Push: every shard to its server; a server folds in the other ranks'.
  for (int d = 1; d < p; ++d) {
    const int server = (r + d) % p;
    if (server < servers) builder.Send(server, at(BufferId::kSend, shard(server)), shard(server).count * es);
  }
  if (is_server) {
    const Segment own = shard(r);
    BufferRange partial = at(BufferId::kSend, own);
    for (int d = 1; d < p; ++d) {
      builder.RecvReduce((r - d + p) % p, partial, at(BufferId::kRecv, own), own.count * es);
      partial = at(BufferId::kRecv, own);
    }
  }
  // Pull: a server hands its reduced shard to everyone; everyone collects.
  if (is_server) {
    for (int d = 1; d < p; ++d) builder.Send((r + d) % p, at(BufferId::kRecv, shard(r)), shard(r).count * es);
  }
  for (int d = 1; d < p; ++d) {
    const int server = (r - d + p) % p;
    if (server < servers) builder.Recv(server, at(BufferId::kRecv, shard(server)), shard(server).count * es);
  }
  return builder.Finish();
}

}  // namespace chorus
