// nccl-tests' conventions: the "size" of a call and the factor that turns
// algorithm bandwidth (size / time) into bus bandwidth, comparable across
// collectives and rank counts.
#pragma once

#include <cstddef>

#include "algorithms/collective.h"
#include "base/dtype.h"

namespace chorus::sim {

inline double NcclTestsBytes(const CollectiveArgs& args) {
  const double bytes = static_cast<double>(args.count) * static_cast<double>(DataTypeSize(args.dtype));
  switch (args.coll) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
      return bytes;
    default:
      return bytes * args.nranks;  // the gathered / scattered / exchanged whole
  }
}

inline double BusBandwidthFactor(Collective coll, int nranks) {
  const double p = nranks;
  switch (coll) {
    case Collective::kAllReduce:
      return 2.0 * (p - 1) / p;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return 1.0;
    default:
      return (p - 1) / p;
  }
}

}  // namespace chorus::sim
