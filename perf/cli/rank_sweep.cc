#include "perf/cli/rank_sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perf/cli/data_pattern.h"
#include "perf/cli/device_memory.h"
#include "perf/cli/report.h"

namespace chorus::perf {

namespace {

using Clock = std::chrono::steady_clock;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char, FreeDeleter>;

struct StreamDeleter {
  void operator()(chorusStream* stream) const { (void)chorusStreamDestroy(stream); }
};
using StreamHandle = std::unique_ptr<chorusStream, StreamDeleter>;

// Fixed-size record allgathered for the "# Using devices" lines.
struct IdentityRecord {
  int32_t rank;
  int32_t pid;
  int32_t local_index;
  char host[52];
};

std::vector<size_t> SweepSizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t size = options.min_bytes; size <= options.max_bytes;) {
    sizes.push_back(size);
    if (options.step_factor > 1) {
      if (size > options.max_bytes / options.step_factor) break;
      size = std::max<size_t>(size * options.step_factor, 1);
    } else {
      if (size > options.max_bytes - options.step_bytes) break;
      size += options.step_bytes;
    }
  }
  return sizes;
}

chorusRedOp_t PublicOp(PerfOp op) {
  switch (op) {
    case PerfOp::kProd: return chorusProd;
    case PerfOp::kMax: return chorusMax;
    case PerfOp::kMin: return chorusMin;
    case PerfOp::kAvg: return chorusAvg;
    default: return chorusSum;
  }
}

class RankSweep {
 public:
  RankSweep(CollectiveKind kind, const Options& options, chorusComm_t comm, const RankPlace& place)
      : kind_(kind), info_(InfoOf(kind)), options_(options), comm_(comm), place_(place) {}

  int Run();

 private:
  [[nodiscard]] bool Check(chorusResult_t result, const char* what);
  [[nodiscard]] bool Setup();
  [[nodiscard]] bool Barrier();
  [[nodiscard]] bool AgreeOnTime(double* seconds);
  [[nodiscard]] bool SumOverRanks(long long* value);
  [[nodiscard]] bool Issue(const RunData& run, bool in_place, chorusRedOp_t op);
  [[nodiscard]] bool Complete();
  [[nodiscard]] bool TimeTest(chorusDataType_t type, std::optional<PerfOp> op, int root);
  [[nodiscard]] bool BenchTime(RunData run, bool in_place, chorusRedOp_t op, GroupResult* result);
  [[nodiscard]] bool SetupDeviceBuffers(size_t send_bytes, size_t recv_bytes);
  // The call's buffers: device memory with -G 1, else the host buffers.
  unsigned char* SendBuffer(const RunData& run, bool in_place) const;
  unsigned char* RecvBuffer(const RunData& run, bool in_place) const;
  unsigned char* SendBase() const { return send_dev_ ? send_dev_.get() : send_.get(); }
  unsigned char* RecvBase() const { return recv_dev_ ? recv_dev_.get() : recv_.get(); }
  // Inputs written and results checked through the host buffers, which
  // image the device ones with -G 1.
  [[nodiscard]] bool Fill(const RunData& run, bool in_place);
  [[nodiscard]] bool CountWrong(const RunData& run, bool in_place, long long* wrong);
  unsigned char* HostImage(unsigned char* call_buffer) const;
  [[nodiscard]] bool DeviceFailure(const std::string& why);  // reports; false

  CollectiveKind kind_;
  const CollectiveInfo& info_;
  const Options& options_;
  chorusComm_t comm_;
  RankPlace place_;
  int rank_ = 0;
  int nranks_ = 1;
  StreamHandle stream_;
  Buffer send_;
  Buffer recv_;
  DeviceBuffer send_dev_;  // -G 1
  DeviceBuffer recv_dev_;
  std::vector<void*> registrations_;  // -R: released with the communicator at the latest
  std::vector<size_t> sizes_;
  std::unique_ptr<Reporter> reporter_;  // rank 0 only
  int seed_ = 0;
  long long failed_results_ = 0;
  bool call_failed_ = false;
};

bool RankSweep::Check(chorusResult_t result, const char* what) {
  if (result == chorusSuccess) return true;
  if (!call_failed_) {
    std::fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank_, what, chorusGetErrorString(result),
                 chorusGetLastError(comm_));
  }
  call_failed_ = true;
  return false;
}

bool RankSweep::Barrier() {
  int one = 1;
  int sum = 0;
  return Check(chorusAllReduce(&one, &sum, 1, chorusInt32, chorusSum, comm_, nullptr), "barrier allreduce");
}

bool RankSweep::AgreeOnTime(double* seconds) {
  double value = *seconds;
  switch (options_.average) {
    case 0:
      if (!Check(chorusBroadcast(&value, seconds, 1, chorusFloat64, 0, comm_, nullptr), "time broadcast")) return false;
      return true;
    case 2:
      return Check(chorusAllReduce(&value, seconds, 1, chorusFloat64, chorusMin, comm_, nullptr), "time allreduce");
    case 3:
      return Check(chorusAllReduce(&value, seconds, 1, chorusFloat64, chorusMax, comm_, nullptr), "time allreduce");
    default:
      return Check(chorusAllReduce(&value, seconds, 1, chorusFloat64, chorusAvg, comm_, nullptr), "time allreduce");
  }
}

bool RankSweep::SumOverRanks(long long* value) {
  int64_t mine = *value;
  int64_t total = 0;
  if (!Check(chorusAllReduce(&mine, &total, 1, chorusInt64, chorusSum, comm_, nullptr), "check allreduce")) {
    return false;
  }
  *value = total;
  return true;
}

bool RankSweep::Setup() {
  if (!Check(chorusCommUserRank(comm_, &rank_), "chorusCommUserRank") ||
      !Check(chorusCommCount(comm_, &nranks_), "chorusCommCount")) {
    return false;
  }
  if (info_.has_root && options_.root >= nranks_) {
    if (rank_ == 0) std::fprintf(stderr, "invalid root %d: only %d ranks\n", options_.root, nranks_);
    call_failed_ = true;
    return false;
  }
  if (!options_.blocking) {
    chorusStream_t stream = nullptr;
    if (!Check(chorusStreamCreate(&stream), "chorusStreamCreate")) return false;
    stream_.reset(stream);
  }
  // Every size's send and receive side fits in max_bytes (nccl-tests'
  // counts never round up); 64-byte aligned like device allocations.
  const size_t bytes = (std::max<size_t>(options_.max_bytes, 1) + 63) / 64 * 64;
  send_.reset(static_cast<unsigned char*>(std::aligned_alloc(64, bytes)));
  recv_.reset(static_cast<unsigned char*>(std::aligned_alloc(64, bytes * RecvAllocationFactor(kind_))));
  if (!send_ || !recv_) {
    std::fprintf(stderr, "rank %d: cannot allocate buffers for %zu bytes\n", rank_, bytes);
    call_failed_ = true;
    return false;
  }
  std::memset(send_.get(), 0, bytes);
  std::memset(recv_.get(), 0, bytes * RecvAllocationFactor(kind_));
  if (options_.device_buffers && !SetupDeviceBuffers(bytes, bytes * RecvAllocationFactor(kind_))) return false;
  if (options_.local_register) {
    void* handle = nullptr;
    if (!Check(chorusCommRegister(comm_, SendBase(), bytes, &handle), "chorusCommRegister")) return false;
    registrations_.push_back(handle);
    if (!Check(chorusCommRegister(comm_, RecvBase(), bytes * RecvAllocationFactor(kind_), &handle),
               "chorusCommRegister")) {
      return false;
    }
    registrations_.push_back(handle);
  }
  sizes_ = SweepSizes(options_);

  IdentityRecord mine{};
  mine.rank = rank_;
  mine.pid = static_cast<int32_t>(getpid());
  mine.local_index = place_.local_index;
  if (gethostname(mine.host, sizeof(mine.host) - 1) != 0) std::strcpy(mine.host, "?");
  std::vector<IdentityRecord> all(static_cast<size_t>(nranks_));
  if (!Check(chorusAllGather(&mine, all.data(), sizeof(mine), chorusInt8, comm_, nullptr), "identity allgather")) {
    return false;
  }
  if (rank_ == 0) {
    std::vector<RankIdentity> identities;
    for (const IdentityRecord& record : all) {
      identities.push_back({record.rank, record.pid, record.local_index,
                            std::string(record.host, strnlen(record.host, sizeof(record.host)))});
    }
    reporter_ = std::make_unique<Reporter>(kind_, options_, nranks_, place_.processes);
    reporter_->PrintHeader(identities);
  }
  return true;
}

bool RankSweep::SetupDeviceBuffers(size_t send_bytes, size_t recv_bytes) {
  std::string why;
  send_dev_ = AllocateDevice(send_bytes, &why);
  if (send_dev_) recv_dev_ = AllocateDevice(recv_bytes, &why);
  if (!send_dev_ || !recv_dev_ || !CopyToDevice(send_dev_.get(), send_.get(), send_bytes, &why) ||
      !CopyToDevice(recv_dev_.get(), recv_.get(), recv_bytes, &why)) {
    return DeviceFailure(why);
  }
  return true;
}

unsigned char* RankSweep::SendBuffer(const RunData& run, bool in_place) const {
  if (!in_place) return SendBase();
  const size_t offset = run.counts.send_inplace_offset * static_cast<size_t>(rank_) + run.counts.send_inplace_shift;
  return RecvBase() + offset * TypeSize(run.type);
}

unsigned char* RankSweep::RecvBuffer(const RunData& run, bool in_place) const {
  if (!in_place) return RecvBase();
  return RecvBase() + run.counts.recv_inplace_offset * static_cast<size_t>(rank_) * TypeSize(run.type);
}

unsigned char* RankSweep::HostImage(unsigned char* call_buffer) const {
  if (!send_dev_) return call_buffer;
  // An out-of-place send buffer is the send base; everything else
  // (in-place send buffers included) lies in the receive buffer.
  if (call_buffer == send_dev_.get()) return send_.get();
  return recv_.get() + (call_buffer - recv_dev_.get());
}

bool RankSweep::DeviceFailure(const std::string& why) {
  if (!call_failed_) std::fprintf(stderr, "rank %d: -G 1 (device buffers): %s\n", rank_, why.c_str());
  call_failed_ = true;
  return false;
}

bool RankSweep::Fill(const RunData& run, bool in_place) {
  unsigned char* buffer = SendBuffer(run, in_place);
  unsigned char* image = HostImage(buffer);
  FillInputs(run, image);
  if (!send_dev_) return true;
  std::string why;
  if (CopyToDevice(buffer, image, run.counts.send * TypeSize(run.type), &why)) return true;
  return DeviceFailure(why);
}

bool RankSweep::CountWrong(const RunData& run, bool in_place, long long* wrong) {
  unsigned char* buffer = RecvBuffer(run, in_place);
  unsigned char* image = HostImage(buffer);
  std::string why;
  if (recv_dev_ && !CopyToHost(image, buffer, run.counts.recv * TypeSize(run.type), &why)) {
    return DeviceFailure(why);
  }
  *wrong = static_cast<long long>(CountWrongResults(run, image));
  return true;
}

bool RankSweep::Issue(const RunData& run, bool in_place, chorusRedOp_t op) {
  return Check(IssueCollective(kind_, SendBuffer(run, in_place), RecvBuffer(run, in_place), run.counts.param,
                               run.type, op, run.root, rank_, nranks_, comm_, stream_.get()),
               info_.name);
}

bool RankSweep::Complete() {
  if (!stream_) return true;
  return Check(chorusStreamSynchronize(stream_.get()), "chorusStreamSynchronize");
}

bool RankSweep::BenchTime(RunData run, bool in_place, chorusRedOp_t op, GroupResult* result) {
  if (options_.check > 0) {
    run.seed = 99;
    if (!Fill(run, in_place)) return false;
  }
  // One untimed call so that connections and staging are set up.
  if (!Issue(run, in_place, op) || !Complete() || !Barrier()) return false;

  const Clock::time_point start = Clock::now();
  for (int iter = 0; iter < options_.iters; ++iter) {
    if (options_.agg_iters > 1 && !Check(chorusGroupStart(), "chorusGroupStart")) return false;
    for (int a = 0; a < options_.agg_iters; ++a) {
      if (!Issue(run, in_place, op)) return false;
    }
    if (options_.agg_iters > 1 && !Check(chorusGroupEnd(), "chorusGroupEnd")) return false;
  }
  const Clock::time_point issued = Clock::now();
  if (!Complete()) return false;
  const double calls = static_cast<double>(options_.iters) * options_.agg_iters;
  double seconds =
      std::chrono::duration<double>((options_.report_cputime ? issued : Clock::now()) - start).count() / calls;
  if (!AgreeOnTime(&seconds)) return false;

  const size_t type_size = TypeSize(run.type);
  const double bytes = static_cast<double>(std::max(run.counts.send, run.counts.recv) * type_size);
  result->time_us = seconds * 1e6;
  result->algbw = bytes / 1e9 / seconds;
  result->busbw = result->algbw * BusBandwidthFactor(kind_, nranks_);

  result->wrong = -1;
  for (int c = 0; c < options_.check; ++c) {
    run.seed = ++seed_;
    long long wrong = 0;
    if (!Fill(run, in_place) || !Issue(run, in_place, op) || !Complete() || !CountWrong(run, in_place, &wrong) ||
        !SumOverRanks(&wrong)) {
      return false;
    }
    result->wrong = wrong;
    if (wrong != 0) {
      ++failed_results_;
      break;
    }
  }
  return true;
}

bool RankSweep::TimeTest(chorusDataType_t type, std::optional<PerfOp> perf_op, int root) {
  const size_t type_size = TypeSize(type);
  RunData run{kind_, {}, type, perf_op.value_or(PerfOp::kSum), root, rank_, nranks_, 0};
  chorusRedOp_t op = PublicOp(run.op);
  if (run.op == PerfOp::kMulSum) {
    unsigned char scalar[8] = {};
    MulSumScalar(type, rank_, scalar);
    if (!Check(chorusRedOpCreatePreMulSum(&op, scalar, type, chorusScalarHostImmediate, comm_),
               "chorusRedOpCreatePreMulSum")) {
      return false;
    }
  }
  // After a failed call the stream may still hold work using the op: the
  // abort that follows frees it instead.
  struct OpGuard {
    chorusRedOp_t op;
    chorusComm_t comm;
    bool custom;
    const bool* call_failed;
    ~OpGuard() {
      if (custom && !*call_failed) (void)chorusRedOpDestroy(op, comm);
    }
  } guard{op, comm_, run.op == PerfOp::kMulSum, &call_failed_};

  if (!Barrier()) return false;
  // Warm up at the largest, then the smallest size, as nccl-tests.
  for (size_t bytes : {options_.max_bytes, options_.min_bytes}) {
    run.counts = CountsOf(kind_, bytes / type_size, type_size, nranks_);
    for (int iter = 0; iter < options_.warmup_iters; ++iter) {
      if (!Issue(run, false, op)) return false;
    }
    if (!Complete()) return false;
  }

  const std::string label = std::string(info_.name) + " " + TypeName(type) +
                            (info_.has_op ? std::string(" ") + OpName(run.op) : std::string()) +
                            (info_.has_root ? " root " + std::to_string(root) : std::string());
  for (int cycle = 0; options_.run_cycles == 0 || cycle < options_.run_cycles; ++cycle) {
    for (size_t index = 0; index < sizes_.size(); ++index) {
      run.counts = CountsOf(kind_, sizes_[index] / type_size, type_size, nranks_);
      RowResult row;
      row.bytes = std::max(run.counts.send, run.counts.recv) * type_size;
      row.count = run.counts.param;
      row.type = TypeName(type);
      row.op = info_.has_op ? OpName(run.op) : "none";
      row.root = info_.has_root ? root : -1;
      for (bool in_place : {false, true}) {
        if (reporter_) {
          reporter_->ShowProgress(label + ": size " + std::to_string(index + 1) + "/" + std::to_string(sizes_.size()) +
                                  " (" + std::to_string(row.bytes) + " B) " + (in_place ? "in-place" : "out-of-place"));
        }
        if (!BenchTime(run, in_place, op, in_place ? &row.in_place : &row.out_of_place)) return false;
      }
      if (reporter_) reporter_->PrintRow(row);
    }
  }
  return Complete();
}

int RankSweep::Run() {
  bool ok = Setup();
  std::vector<std::optional<PerfOp>> ops;
  if (info_.has_op) {
    for (PerfOp op : options_.ops) ops.push_back(op);
  } else {
    ops.push_back(std::nullopt);
  }
  std::vector<int> roots;
  if (!info_.has_root) {
    roots.push_back(-1);
  } else if (options_.root < 0) {
    for (int r = 0; r < nranks_; ++r) roots.push_back(r);
  } else {
    roots.push_back(options_.root);
  }
  for (chorusDataType_t type : options_.types) {
    for (const auto& op : ops) {
      for (int root : roots) ok = ok && TimeTest(type, op, root);
    }
  }
  if (call_failed_ || !ok) {
    // Peers may be gone or stuck: abort so that they fail now, before the
    // stream waits for its pending work.
    (void)chorusCommAbort(comm_);
    return kExitCallFailed;
  }
  stream_.reset();
  bool deregistered = true;
  for (void* handle : registrations_) {
    deregistered = Check(chorusCommDeregister(comm_, handle), "chorusCommDeregister") && deregistered;
  }
  const bool finished = (!reporter_ || reporter_->Finish(failed_results_)) && deregistered;
  if (!Check(chorusCommDestroy(comm_), "chorusCommDestroy") || !finished) return kExitCallFailed;
  return failed_results_ == 0 ? kExitOk : kExitWrongResults;
}

}  // namespace

int RunRankSweep(CollectiveKind kind, const Options& options, chorusComm_t comm, const RankPlace& place) {
  RankSweep sweep(kind, options, comm, place);
  return sweep.Run();
}

}  // namespace chorus::perf
