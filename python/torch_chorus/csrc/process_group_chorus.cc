#include "process_group_chorus.h"

#include <Python.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "tensor_args.h"
#include "type_map.h"

namespace torch_chorus {
namespace {

constexpr const char* kUniqueIdKey = "chorus/unique_id";

}  // namespace

ProcessGroupChorus::ProcessGroupChorus(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                       ChorusOptions options)
    : c10d::ProcessGroup(rank, size), store_(store), timeout_(options.timeout), received_(size, 0) {
  TORCH_CHECK(store, "Chorus: no store to meet in");
  chorusUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank == 0) {
    const chorusResult_t made = chorusGetUniqueId(&id);
    TORCH_CHECK(made == chorusSuccess, "Chorus: could not create the rendezvous id: ", ChorusMessage(made, nullptr));
    store->set(kUniqueIdKey, std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
  } else {
    const std::vector<uint8_t> value = store->get(kUniqueIdKey);  // waits up to the store's timeout
    TORCH_CHECK(value.size() == sizeof(id.internal), "Chorus: the store's entry ", kUniqueIdKey, " has ",
                value.size(), " bytes, not a Chorus id of ", sizeof(id.internal),
                " (another backend or version wrote it)");
    std::memcpy(id.internal, value.data(), value.size());
  }
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  const long long timeout_ms = options.timeout.count();
  config.timeoutMs = timeout_ms <= 0 || timeout_ms > INT32_MAX ? INT32_MAX : static_cast<int>(timeout_ms);
  config.algo = options.algo.empty() ? nullptr : options.algo.c_str();
  config.netName = "torch_chorus";
  const chorusResult_t joined = chorusCommInitRankConfig(&comm_, size, id, rank, &config);
  TORCH_CHECK(joined == chorusSuccess, "Chorus: rank ", rank, " of ", size,
              " could not join the process group: ", ChorusMessage(joined, nullptr));
  const chorusResult_t streamed = chorusStreamCreate(&stream_);
  if (streamed != chorusSuccess) {
    (void)chorusCommDestroy(comm_);
    TORCH_CHECK(false, "Chorus: could not create a stream: ", ChorusMessage(streamed, nullptr));
  }
}

ProcessGroupChorus::~ProcessGroupChorus() {
  // Python drops the last reference with the GIL held, and the completion
  // thread may need the GIL to release a tensor that has a Python object:
  // release it while waiting for that thread.
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
  completions_->Stop();  // every work whose future was asked for finished first
  {
    std::lock_guard<std::mutex> lock(announce_mutex_);
    announce_stopping_ = true;
  }
  announce_cv_.notify_all();
  if (announcer_.joinable()) announcer_.join();  // every send counted first
  chorusResult_t async_error = chorusSuccess;
  (void)chorusCommGetAsyncError(comm_, &async_error);
  (void)chorusStreamDestroy(stream_);
  for (auto& entry : compress_states_) (void)chorusCompressStateDestroy(entry.second);
  // A failed communicator is aborted: its peers may be gone.
  if (async_error != chorusSuccess) {
    (void)chorusCommAbort(comm_);
  } else {
    (void)chorusCommDestroy(comm_);
  }
}

c10::intrusive_ptr<ChorusWork> ProcessGroupChorus::Launch(c10d::OpType type, const char* title, std::string what,
                                                          const std::function<chorusResult_t()>& issue,
                                                          std::vector<at::Tensor> outputs,
                                                          std::function<void()> finalize) {
  TORCH_CHECK(!coalescing_.load(), "Chorus ", what,
              ": only send and recv can be called inside a coalescing block (batch_isend_irecv)");
  ++sequence_;
  const chorusResult_t issued = issue();
  TORCH_CHECK(issued == chorusSuccess, "Chorus ", what, ": ", ChorusMessage(issued, comm_));
  chorusEvent_t event = nullptr;
  chorusResult_t result = chorusEventCreate(&event);
  if (result == chorusSuccess) result = chorusEventRecord(event, stream_);
  if (result != chorusSuccess) {
    if (event != nullptr) (void)chorusEventDestroy(event);
    TORCH_CHECK(false, "Chorus ", what, ": ", ChorusMessage(result, nullptr));
  }
  return c10::make_intrusive<ChorusWork>(rank_, type, title, comm_, event, std::move(outputs), std::move(finalize),
                                         std::move(what), completions_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  CheckSingle(tensors, "broadcast");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "Chorus broadcast: root ", opts.rootRank,
              " is out of range [0, ", size_, ")");
  TORCH_CHECK(opts.rootTensor == 0, "Chorus broadcast: rootTensor must be 0");
  auto staged = std::make_shared<Staged>(tensors[0]);
  void* data = staged->buffer.data_ptr();
  const size_t bytes = Bytes(staged->buffer);
  const int root = static_cast<int>(opts.rootRank);
  return Launch(
      c10d::OpType::BROADCAST, "chorus:broadcast", Describe("broadcast", tensors[0]),
      [&] { return chorusBroadcast(data, data, bytes, chorusUint8, root, comm_, stream_); }, tensors,
      [staged] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  CheckSingle(tensors, "allreduce");
  const at::Tensor& tensor = tensors[0];
  const OpChoice op = ChorusOpFor(opts.reduceOp, tensor.scalar_type());
  TORCH_CHECK(op.error.empty(), "Chorus allreduce: ", op.error);
  const ReductionType type = *ReductionTypeOf(tensor.scalar_type());
  auto staged = std::make_shared<Staged>(tensor);
  if (opts.reduceOp.op_ == c10d::ReduceOp::PREMUL_SUM) {
    // sum_i(factor * x_i): scale this rank's share, then sum.
    const auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(opts.reduceOp.supplement_.get());
    TORCH_CHECK(supplement != nullptr, "Chorus allreduce: PREMUL_SUM without its factor");
    staged->buffer = supplement->tensor_factors.empty()
                         ? staged->buffer.mul(supplement->double_factor)
                         : staged->buffer.mul(supplement->tensor_factors[0].to(at::kCPU));
  }
  void* data = staged->buffer.data_ptr();
  const size_t count = staged->buffer.numel() * type.elements_per_value;
  return Launch(
      c10d::OpType::ALLREDUCE, "chorus:all_reduce", Describe("allreduce", tensor),
      [&] { return chorusAllReduce(data, data, count, type.dtype, op.op, comm_, stream_); }, tensors,
      [staged] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                       const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "Chorus allreduce_coalesced: no tensors");
  for (const at::Tensor& t : tensors) {
    CheckCpu(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                "Chorus allreduce_coalesced: all tensors must have the same dtype");
  }
  const OpChoice op = ChorusOpFor(opts.reduceOp, tensors[0].scalar_type());
  TORCH_CHECK(op.error.empty(), "Chorus allreduce_coalesced: ", op.error);
  TORCH_CHECK(opts.reduceOp.op_ != c10d::ReduceOp::PREMUL_SUM, "Chorus allreduce_coalesced: PREMUL_SUM is not supported");
  const ReductionType type = *ReductionTypeOf(tensors[0].scalar_type());
  at::Tensor flat = Flatten(tensors);
  void* data = flat.data_ptr();
  const size_t count = flat.numel() * type.elements_per_value;
  std::vector<at::Tensor> outputs = tensors;
  return Launch(
      c10d::OpType::ALLREDUCE_COALESCED, "chorus:all_reduce_coalesced", Describe("allreduce_coalesced", flat),
      [&] { return chorusAllReduce(data, data, count, type.dtype, op.op, comm_, stream_); }, tensors,
      [flat, outputs] { Unflatten(flat, outputs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  CheckSingle(tensors, "reduce");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "Chorus reduce: root ", opts.rootRank,
              " is out of range [0, ", size_, ")");
  TORCH_CHECK(opts.rootTensor == 0, "Chorus reduce: rootTensor must be 0");
  const at::Tensor& tensor = tensors[0];
  const OpChoice op = ChorusOpFor(opts.reduceOp, tensor.scalar_type());
  TORCH_CHECK(op.error.empty(), "Chorus reduce: ", op.error);
  const ReductionType type = *ReductionTypeOf(tensor.scalar_type());
  auto staged = std::make_shared<Staged>(tensor);
  if (opts.reduceOp.op_ == c10d::ReduceOp::PREMUL_SUM) {
    const auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(opts.reduceOp.supplement_.get());
    TORCH_CHECK(supplement != nullptr, "Chorus reduce: PREMUL_SUM without its factor");
    staged->buffer = supplement->tensor_factors.empty()
                         ? staged->buffer.mul(supplement->double_factor)
                         : staged->buffer.mul(supplement->tensor_factors[0].to(at::kCPU));
  }
  void* data = staged->buffer.data_ptr();
  const size_t count = staged->buffer.numel() * type.elements_per_value;
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = rank_ == root;
  return Launch(
      c10d::OpType::REDUCE, "chorus:reduce", Describe("reduce", tensor),
      [&] { return chorusReduce(data, data, count, type.dtype, op.op, root, comm_, stream_); }, tensors,
      [staged, is_root] {
        if (is_root) staged->CopyBack();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllgatherOptions&) {
  CheckSingle(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "Chorus allgather: expects one output list, got ", outputs.size());
  TORCH_CHECK(static_cast<int>(outputs[0].size()) == size_, "Chorus allgather: the output list has ",
              outputs[0].size(), " tensors for ", size_, " ranks");
  for (const at::Tensor& out : outputs[0]) {
    CheckCpu(out, "allgather");
    CheckSameShape(out, inputs[0], "allgather");
  }
  const at::Tensor input = inputs[0].contiguous();
  at::Tensor flat = at::empty({static_cast<int64_t>(size_) * input.numel()}, input.options());
  const void* send = input.data_ptr();
  void* recv = flat.data_ptr();
  const size_t bytes = Bytes(input);
  std::vector<at::Tensor> targets = outputs[0];
  return Launch(
      c10d::OpType::ALLGATHER, "chorus:all_gather", Describe("allgather", input),
      [&] { return chorusAllGather(send, recv, bytes, chorusUint8, comm_, stream_); }, targets,
      [flat, input, targets] { Unflatten(flat, targets); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  CheckCpu(output, "_allgather_base");
  CheckCpu(input, "_allgather_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "Chorus _allgather_base: dtypes differ");
  TORCH_CHECK(output.numel() == static_cast<int64_t>(size_) * input.numel(), "Chorus _allgather_base: output has ",
              output.numel(), " elements, not ", size_, " x ", input.numel());
  const at::Tensor in = input.contiguous();
  auto staged = std::make_shared<Staged>(output);
  const void* send = in.data_ptr();
  void* recv = staged->buffer.data_ptr();
  const size_t bytes = Bytes(in);
  return Launch(
      c10d::OpType::_ALLGATHER_BASE, "chorus:_all_gather_base", Describe("_allgather_base", in),
      [&] { return chorusAllGather(send, recv, bytes, chorusUint8, comm_, stream_); }, {output},
      [staged, in] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  TORCH_CHECK(!inputs.empty(), "Chorus allgather_coalesced: no input tensors");
  TORCH_CHECK(static_cast<int>(output_lists.size()) == size_, "Chorus allgather_coalesced: ", output_lists.size(),
              " output lists for ", size_, " ranks");
  for (const at::Tensor& t : inputs) {
    CheckCpu(t, "allgather_coalesced");
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(),
                "Chorus allgather_coalesced: all tensors must have the same dtype");
  }
  for (const auto& list : output_lists) {
    TORCH_CHECK(list.size() == inputs.size(), "Chorus allgather_coalesced: an output list has ", list.size(),
                " tensors for ", inputs.size(), " inputs");
    for (size_t j = 0; j < list.size(); ++j) {
      CheckCpu(list[j], "allgather_coalesced");
      CheckSameShape(list[j], inputs[j], "allgather_coalesced");
    }
  }
  at::Tensor flat_in = Flatten(inputs);
  at::Tensor flat_out = at::empty({static_cast<int64_t>(size_) * flat_in.numel()}, flat_in.options());
  const void* send = flat_in.data_ptr();
  void* recv = flat_out.data_ptr();
  const size_t bytes = Bytes(flat_in);
  std::vector<at::Tensor> all;
  for (const auto& list : output_lists) all.insert(all.end(), list.begin(), list.end());
  return Launch(
      c10d::OpType::ALLGATHER_COALESCED, "chorus:all_gather_coalesced", Describe("allgather_coalesced", flat_in),
      [&] { return chorusAllGather(send, recv, bytes, chorusUint8, comm_, stream_); }, all,
      [flat_in, flat_out, all] { Unflatten(flat_out, all); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::GatherOptions& opts) {
  CheckSingle(inputs, "gather");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "Chorus gather: root ", opts.rootRank,
              " is out of range [0, ", size_, ")");
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = rank_ == root;
  std::vector<at::Tensor> targets;
  if (is_root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "Chorus gather: the root needs one output list of ", size_, " tensors");
    for (const at::Tensor& out : outputs[0]) {
      CheckCpu(out, "gather");
      CheckSameShape(out, inputs[0], "gather");
    }
    targets = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "Chorus gather: only the root takes output tensors");
  }
  const at::Tensor input = inputs[0].contiguous();
  at::Tensor flat = is_root ? at::empty({static_cast<int64_t>(size_) * input.numel()}, input.options()) : at::Tensor();
  const void* send = input.data_ptr();
  void* recv = is_root ? flat.data_ptr() : nullptr;
  const size_t bytes = Bytes(input);
  return Launch(
      c10d::OpType::GATHER, "chorus:gather", Describe("gather", input),
      [&] { return chorusGather(send, recv, bytes, chorusUint8, root, comm_, stream_); }, targets,
      [flat, input, targets] {
        if (flat.defined()) Unflatten(flat, targets);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ScatterOptions& opts) {
  CheckSingle(outputs, "scatter");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "Chorus scatter: root ", opts.rootRank,
              " is out of range [0, ", size_, ")");
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = rank_ == root;
  at::Tensor flat;
  if (is_root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                "Chorus scatter: the root needs one input list of ", size_, " tensors");
    for (const at::Tensor& in : inputs[0]) {
      CheckCpu(in, "scatter");
      CheckSameShape(in, outputs[0], "scatter");
    }
    flat = Flatten(inputs[0]);
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "Chorus scatter: only the root takes input tensors");
  }
  auto staged = std::make_shared<Staged>(outputs[0]);
  const void* send = is_root ? flat.data_ptr() : nullptr;
  void* recv = staged->buffer.data_ptr();
  const size_t bytes = Bytes(staged->buffer);
  return Launch(
      c10d::OpType::SCATTER, "chorus:scatter", Describe("scatter", outputs[0]),
      [&] { return chorusScatter(send, recv, bytes, chorusUint8, root, comm_, stream_); }, outputs,
      [staged, flat] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                                  const c10d::ReduceScatterOptions& opts) {
  CheckSingle(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
              "Chorus reduce_scatter: expects one input list of ", size_, " tensors");
  for (const at::Tensor& in : inputs[0]) {
    CheckCpu(in, "reduce_scatter");
    CheckSameShape(in, outputs[0], "reduce_scatter");
  }
  const OpChoice op = ChorusOpFor(opts.reduceOp, outputs[0].scalar_type());
  TORCH_CHECK(op.error.empty(), "Chorus reduce_scatter: ", op.error);
  TORCH_CHECK(opts.reduceOp.op_ != c10d::ReduceOp::PREMUL_SUM, "Chorus reduce_scatter: PREMUL_SUM is not supported");
  const ReductionType type = *ReductionTypeOf(outputs[0].scalar_type());
  at::Tensor flat = Flatten(inputs[0]);
  auto staged = std::make_shared<Staged>(outputs[0]);
  const void* send = flat.data_ptr();
  void* recv = staged->buffer.data_ptr();
  const size_t count = staged->buffer.numel() * type.elements_per_value;
  return Launch(
      c10d::OpType::REDUCE_SCATTER, "chorus:reduce_scatter", Describe("reduce_scatter", outputs[0]),
      [&] { return chorusReduceScatter(send, recv, count, type.dtype, op.op, comm_, stream_); }, outputs,
      [staged, flat] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                        const c10d::ReduceScatterOptions& opts) {
  CheckCpu(output, "_reduce_scatter_base");
  CheckCpu(input, "_reduce_scatter_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "Chorus _reduce_scatter_base: dtypes differ");
  TORCH_CHECK(input.numel() == static_cast<int64_t>(size_) * output.numel(), "Chorus _reduce_scatter_base: input has ",
              input.numel(), " elements, not ", size_, " x ", output.numel());
  const OpChoice op = ChorusOpFor(opts.reduceOp, output.scalar_type());
  TORCH_CHECK(op.error.empty(), "Chorus _reduce_scatter_base: ", op.error);
  TORCH_CHECK(opts.reduceOp.op_ != c10d::ReduceOp::PREMUL_SUM,
              "Chorus _reduce_scatter_base: PREMUL_SUM is not supported");
  const ReductionType type = *ReductionTypeOf(output.scalar_type());
  const at::Tensor in = input.contiguous();
  auto staged = std::make_shared<Staged>(output);
  const void* send = in.data_ptr();
  void* recv = staged->buffer.data_ptr();
  const size_t count = staged->buffer.numel() * type.elements_per_value;
  return Launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, "chorus:_reduce_scatter_base", Describe("_reduce_scatter_base", output),
      [&] { return chorusReduceScatter(send, recv, count, type.dtype, op.op, comm_, stream_); }, {output},
      [staged, in] { staged->CopyBack(); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                 std::vector<int64_t>& output_split_sizes,
                                                                 std::vector<int64_t>& input_split_sizes,
                                                                 const c10d::AllToAllOptions&) {
  CheckCpu(output, "alltoall_base");
  CheckCpu(input, "alltoall_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "Chorus alltoall_base: dtypes differ");
  const at::Tensor in = input.contiguous();
  auto staged = std::make_shared<Staged>(output);
  const uint8_t* send = static_cast<const uint8_t*>(in.data_ptr());
  uint8_t* recv = static_cast<uint8_t*>(staged->buffer.data_ptr());
  std::function<void()> finalize = [staged, in] { staged->CopyBack(); };
  if (output_split_sizes.empty() && input_split_sizes.empty()) {
    TORCH_CHECK(in.numel() == output.numel() && in.numel() % size_ == 0, "Chorus alltoall_base: ", in.numel(),
                " input and ", output.numel(), " output elements do not split evenly over ", size_, " ranks");
    const size_t block = Bytes(in) / size_;
    return Launch(
        c10d::OpType::ALLTOALL_BASE, "chorus:all_to_all", Describe("alltoall_base", in),
        [&] { return chorusAlltoAll(send, recv, block, chorusUint8, comm_, stream_); }, {output}, finalize);
  }
  // Uneven splits along dim 0: a group of sends and receives.
  auto splits = [&](const std::vector<int64_t>& given, const at::Tensor& t, const char* which) {
    std::vector<int64_t> sizes = given;
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    if (sizes.empty()) {
      TORCH_CHECK(rows % size_ == 0, "Chorus alltoall_base: ", which, " dim 0 (", rows, ") does not split over ",
                  size_, " ranks");
      sizes.assign(size_, rows / size_);
    }
    TORCH_CHECK(static_cast<int>(sizes.size()) == size_, "Chorus alltoall_base: ", sizes.size(), " ", which,
                " split sizes for ", size_, " ranks");
    TORCH_CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == rows, "Chorus alltoall_base: ", which,
                " split sizes do not add up to dim 0 (", rows, ")");
    for (int64_t s : sizes) TORCH_CHECK(s >= 0, "Chorus alltoall_base: negative split size");
    return sizes;
  };
  const std::vector<int64_t> in_sizes = splits(input_split_sizes, in, "input");
  const std::vector<int64_t> out_sizes = splits(output_split_sizes, staged->buffer, "output");
  const size_t in_row = in.dim() == 0 || in.size(0) == 0 ? 0 : Bytes(in) / in.size(0);
  const size_t out_row = staged->buffer.dim() == 0 || staged->buffer.size(0) == 0
                             ? 0
                             : Bytes(staged->buffer) / staged->buffer.size(0);
  return Launch(
      c10d::OpType::ALLTOALL_BASE, "chorus:all_to_all", Describe("alltoall_base", in),
      [&]() -> chorusResult_t {
        chorusResult_t result = chorusGroupStart();
        size_t in_at = 0, out_at = 0;
        for (int peer = 0; peer < size_ && result == chorusSuccess; ++peer) {
          const size_t send_bytes = in_sizes[peer] * in_row, recv_bytes = out_sizes[peer] * out_row;
          result = chorusSend(send + in_at, send_bytes, chorusUint8, peer, comm_, stream_);
          if (result == chorusSuccess) result = chorusRecv(recv + out_at, recv_bytes, chorusUint8, peer, comm_, stream_);
          in_at += send_bytes;
          out_at += recv_bytes;
        }
        const chorusResult_t ended = chorusGroupEnd();
        return result != chorusSuccess ? result : ended;
      },
      {output}, finalize);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
              "Chorus alltoall: expects ", size_, " input and output tensors, got ", inputs.size(), " and ",
              outputs.size());
  std::vector<at::Tensor> ins;
  std::vector<std::shared_ptr<Staged>> outs;
  for (int i = 0; i < size_; ++i) {
    CheckCpu(inputs[i], "alltoall");
    CheckCpu(outputs[i], "alltoall");
    TORCH_CHECK(inputs[i].scalar_type() == outputs[i].scalar_type(), "Chorus alltoall: dtypes differ");
    ins.push_back(inputs[i].contiguous());
    outs.push_back(std::make_shared<Staged>(outputs[i]));
  }
  return Launch(
      c10d::OpType::ALLTOALL, "chorus:all_to_all", Describe("alltoall", inputs[0]),
      [&]() -> chorusResult_t {
        chorusResult_t result = chorusGroupStart();
        for (int peer = 0; peer < size_ && result == chorusSuccess; ++peer) {
          result = chorusSend(ins[peer].data_ptr(), Bytes(ins[peer]), chorusUint8, peer, comm_, stream_);
          if (result == chorusSuccess) {
            result = chorusRecv(outs[peer]->buffer.data_ptr(), Bytes(outs[peer]->buffer), chorusUint8, peer, comm_,
                                stream_);
          }
        }
        const chorusResult_t ended = chorusGroupEnd();
        return result != chorusSuccess ? result : ended;
      },
      outputs,
      [outs, ins] {
        for (const auto& staged : outs) staged->CopyBack();
      });
}

}  // namespace torch_chorus
