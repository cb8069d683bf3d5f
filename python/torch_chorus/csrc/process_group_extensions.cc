// Chorus's own operations beyond torch.distributed's: compressed allreduce
// and gossip averaging, reached through torch_chorus's Python functions.
#include "process_group_chorus.h"

#include <c10/util/Exception.h>

#include "tensor_args.h"
#include "type_map.h"

namespace torch_chorus {

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::AllReduceCompressed(at::Tensor& tensor, int wire, int64_t key) {
  CheckCpu(tensor, "allreduce_compressed");
  TORCH_CHECK(tensor.scalar_type() == at::kFloat, "Chorus allreduce_compressed: float32 tensors only, got ",
              tensor.scalar_type());
  TORCH_CHECK(wire >= 0 && wire < chorusNumCompressions, "Chorus allreduce_compressed: unknown wire format ", wire);
  auto staged = std::make_shared<Staged>(tensor);
  const size_t count = staged->buffer.numel();
  chorusCompressState_t& state = compress_states_[{key, wire, count}];
  if (state == nullptr) {
    const chorusResult_t made =
        chorusCompressStateCreate(&state, static_cast<chorusCompression_t>(wire), count, chorusFloat32, comm_);
    TORCH_CHECK(made == chorusSuccess, "Chorus allreduce_compressed: ", ChorusMessage(made, comm_));
  }
  void* data = staged->buffer.data_ptr();
  chorusCompressState_t current = state;
  return Launch(
      c10d::OpType::ALLREDUCE, "chorus:all_reduce_compressed", Describe("allreduce_compressed", tensor),
      [&] { return chorusAllReduceCompressed(data, data, count, chorusFloat32, current, comm_, stream_); }, {tensor},
      [staged] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::Gossip(at::Tensor& tensor, bool rotate, uint64_t seed) {
  CheckCpu(tensor, "gossip");
  const auto type = ReductionTypeOf(tensor.scalar_type());
  TORCH_CHECK(at::isFloatingType(tensor.scalar_type()) && type, "Chorus gossip: floating tensors only, got ",
              tensor.scalar_type());
  auto staged = std::make_shared<Staged>(tensor);
  void* data = staged->buffer.data_ptr();
  const size_t count = staged->buffer.numel();
  gossip_.rotate = rotate ? 1 : 0;
  gossip_.seed = seed;
  return Launch(
      c10d::OpType::ALLREDUCE, "chorus:gossip", Describe("gossip", tensor),
      [&] { return chorusGossip(data, data, count, type->dtype, &gossip_, comm_, stream_); }, {tensor},
      [staged] { staged->CopyBack(); });
}

}  // namespace torch_chorus
