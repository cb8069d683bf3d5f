// StepExchange: how one training step turns each rank's local gradient into
// a weight update (docs/trainer.md, "Communication modes"):
//  - sync:     gradients averaged by chorusAllReduce (fused or bucketed);
//  - overlap:  the same buckets, each allreduced on a host stream as soon as
//              the backward pass has finished it;
//  - pipe-sgd: after a warm-up, step t's averaged gradient is applied at
//              step t+1 while its allreduce runs under step t+1's compute;
//  - gossip:   local optimizer step, then weights averaged with one partner
//              (chorusGossip, cube partners, rotation);
//  - lion-cub: Lion whose update direction is the ranks' majority vote of
//              sign(c) (chorusAllReduceCompressed), momentum averaged every K.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "chorus/chorus.h"
#include "examples/trainer/gradient_sync.h"
#include "examples/trainer/optimizer.h"

namespace trainer {

using Clock = std::chrono::steady_clock;
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct ExchangeOptions {
  std::string mode = "sync";     // sync, overlap, pipe-sgd, gossip, lion-cub
  size_t bucket_bytes = 0;       // sync: 0 = fused; overlap: 0 = kDefaultOverlapBucketBytes
  int warmup_steps = -1;         // pipe-sgd synchronous steps first; -1: min(20, steps per epoch)
  bool fp16_wire = false;        // pipe-sgd: chorusCompressFp16
  bool lion_cub_int8 = false;    // lion-cub: chorusCompressInt8 instead of 1-bit sign votes
  int momentum_sync_steps = 10;  // lion-cub: plain AllReduce of the momentum every K steps
  uint64_t gossip_seed = 1;      // gossip: partner rotation, the same on every rank
};

constexpr size_t kDefaultOverlapBucketBytes = 256 * 1024;

// Communication accounting of an epoch, for the report.
struct ExchangeCounters {
  double blocking_seconds = 0.0;  // the training loop waited on communication
  double hidden_seconds = 0.0;    // communication that ran under computation (overlap, pipe-sgd)
  unsigned long long wire_bytes = 0;          // this rank's payload of compressed collectives
  unsigned long long uncompressed_bytes = 0;  // the same calls as float32 AllReduces
  unsigned long long extra_bytes = 0;         // this rank's payload of plain collectives beside them
  // This rank's payload of the collectives that carry gradients (or, for
  // lion-cub, the votes derived from them), as the library counts payload:
  // its own contribution, not the algorithm's forwarding. Weights (gossip)
  // and momenta (lion-cub) are not gradients: they go to extra_bytes.
  unsigned long long gradient_bytes = 0;
};

class StepExchange {
 public:
  virtual ~StepExchange() = default;
  // During backward: gradients[ready_begin, end) are final for this step.
  virtual void GradientsReady(std::vector<float>& /*gradients*/, size_t /*ready_begin*/) {}
  // Exchanges this step's gradients and updates `weights` (global step `step`).
  // `gradients` is the model's: an exchange may swap its storage for another
  // buffer of the same size (pipe-sgd), never resize it.
  virtual chorus::Status Update(int step, std::vector<float>& weights, std::vector<float>& gradients, float lr) = 0;
  // End of an epoch: no collective may be in flight afterwards (metrics and
  // evaluation use the communicator).
  virtual chorus::Status Quiesce() { return chorus::Status::Ok(); }
  // Whether a backward hook is wanted (overlap only).
  virtual bool wants_gradient_hook() const { return false; }
  // Counters since the last call, then reset.
  ExchangeCounters TakeCounters() {
    ExchangeCounters out = counters_;
    counters_ = ExchangeCounters{};
    return out;
  }

 protected:
  ExchangeCounters counters_;
};

// Owns a chorus host stream; destroying it waits for pending work.
class HostStream {
 public:
  HostStream() = default;
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;
  ~HostStream() {
    if (stream_ != nullptr) (void)chorusStreamDestroy(stream_);
  }
  chorus::Status Create() {
    if (chorusStreamCreate(&stream_) != chorusSuccess) {
      return chorus::InternalError("chorusStreamCreate failed: ", chorusGetLastError(nullptr));
    }
    return chorus::Status::Ok();
  }
  chorusStream_t get() const { return stream_; }

 private:
  chorusStream_t stream_ = nullptr;
};

// Turns a chorus result into a Status naming `what`.
chorus::Status CheckChorus(chorusResult_t result, chorusComm_t comm, const char* what);

// Builds the exchange for `options.mode`. `optimizer` is used by every mode
// but lion-cub (which brings its own Lion from `optimizer_options`).
chorus::Status MakeStepExchange(const ExchangeOptions& options, const OptimizerOptions& optimizer_options,
                                chorusComm_t comm, GradientSync* sync, size_t parameter_count,
                                int steps_per_epoch, std::unique_ptr<StepExchange>* out);

// One factory per mode (step_exchange_*.cc).
std::unique_ptr<StepExchange> MakeSyncExchange(GradientSync* sync, std::unique_ptr<Optimizer> optimizer);
chorus::Status MakeOverlapExchange(chorusComm_t comm, size_t bucket_bytes, std::unique_ptr<Optimizer> optimizer,
                                   std::unique_ptr<StepExchange>* out);
chorus::Status MakePipeSgdExchange(chorusComm_t comm, GradientSync* sync, int warmup_steps, bool fp16_wire,
                                   size_t parameter_count, std::unique_ptr<Optimizer> optimizer,
                                   std::unique_ptr<StepExchange>* out);
chorus::Status MakeGossipExchange(chorusComm_t comm, uint64_t seed, std::unique_ptr<Optimizer> optimizer,
                                  std::unique_ptr<StepExchange>* out);
chorus::Status MakeLionCubExchange(chorusComm_t comm, const OptimizerOptions& lion, bool int8,
                                   int momentum_sync_steps, size_t parameter_count,
                                   std::unique_ptr<StepExchange>* out);

}  // namespace trainer
