#include "examples/trainer/options.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "examples/trainer/elastic_update.h"

namespace trainer {
namespace {

chorus::Status ToInt(const std::string& flag, const char* text, int* out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > (1l << 30)) {
    return chorus::InvalidArgument(flag, " expects a non-negative integer, not '", text, "'");
  }
  *out = static_cast<int>(value);
  return chorus::Status::Ok();
}

chorus::Status ToDouble(const std::string& flag, const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(*out >= 0)) {
    return chorus::InvalidArgument(flag, " expects a non-negative number, not '", text, "'");
  }
  return chorus::Status::Ok();
}

chorus::Status ToFloat(const std::string& flag, const char* text, float* out) {
  double value = 0;
  CHORUS_RETURN_IF_ERROR(ToDouble(flag, text, &value));
  *out = static_cast<float>(value);
  return chorus::Status::Ok();
}

}  // namespace

const char* UsageText() {
  return "usage: chorus_trainer [options]\n"
         "  --model lenet|nin          network (default lenet)\n"
         "  --epochs N                 (default 1)\n"
         "  --batch N                  global batch, split over ranks (default 64)\n"
         "  --optimizer sgd|lion       (default sgd)\n"
         "  --lr X                     base learning rate (default 0.01)\n"
         "  --lr-reference-batch N     linear scaling: lr * batch / N (default 0: off)\n"
         "  --lr-schedule constant|step|poly  (default step)\n"
         "  --lr-step-epochs X --lr-gamma X   step decay (default never, 0.1)\n"
         "  --lr-power X               poly power (default 0.5)\n"
         "  --warmup-epochs X          linear warm-up (default 0)\n"
         "  --momentum X --weight-decay X --beta1 X --beta2 X\n"
         "  --ranks N                  local ranks as processes (default 1); under mpirun,\n"
         "                             srun or torchrun the launcher's environment wins\n"
         "  --algo auto|ring|tree|ps|hd|direct  allreduce algorithm (chorusConfig_t.algo)\n"
         "  --bucket-mib X             allreduce gradients in X MiB buckets (default 0: one)\n"
         "communication modes (at most one; default: synchronous AllReduce):\n"
         "  --overlap                  allreduce each bucket on a stream as soon as backward\n"
         "                             produced it (default bucket 0.25 MiB)\n"
         "  --pipe-sgd                 Pipe-SGD, staleness 1, after --warmup-steps N\n"
         "                             synchronous steps (default min(20, steps/epoch));\n"
         "                             --fp16-wire: fp16 on the wire (chorusCompressFp16)\n"
         "  --gossip                   average weights with one partner per step (GossipGraD)\n"
         "  --lion-cub                 Lion with a 1-bit majority vote of sign(c);\n"
         "                             --lion-cub-int8: int8 votes; --momentum-sync K:\n"
         "                             average momenta every K steps (default 10)\n"
         "  --data DIR                 Fashion-MNIST IDX files (default " 
         "/usr/share/datasets/fashion-mnist)\n"
         "  --train-limit N --test-limit N  use only the first N samples\n"
         "  --max-steps N              at most N steps per epoch\n"
         "  --seed N                   weight initialisation and data order\n"
         "  --blas-threads N           OpenBLAS threads per rank (default cores/ranks)\n"
         "  --csv FILE                 append per-epoch rows to FILE\n"
         "  --step-trace FILE          write each step's timestamps to FILE.<rank> (CSV;\n"
         "                             examples/trainer/step_trace.py summarises them)\n"
         "  --timed-after-steps N      also time each epoch's steps from step N on (steady\n"
         "                             state, e.g. without pipe-sgd's warm-up; CSV steady_*)\n"
         "  --elastic                  survive dead ranks: shrink, rebalance, redo the step\n"
         "                             (sync, --pipe-sgd or --lion-cub; docs/trainer.md)\n"
         "  --kill-rank R --kill-at-step N  debugging: rank R SIGKILLs itself at step N\n";
}

chorus::Status ParseOptions(int argc, char** argv, Options* out) {
  Options o;
  TrainOptions& t = o.train;
  int seed = 1;
  using Setter = std::function<chorus::Status(const std::string&, const char*)>;
  auto text = [](std::string* field) -> Setter {
    return [field](const std::string&, const char* value) {
      *field = value;
      return chorus::Status::Ok();
    };
  };
  auto integer = [](int* field) -> Setter {
    return [field](const std::string& flag, const char* value) { return ToInt(flag, value, field); };
  };
  auto real = [](float* field) -> Setter {
    return [field](const std::string& flag, const char* value) { return ToFloat(flag, value, field); };
  };
  const std::map<std::string, Setter> flags = {
      {"--model", text(&o.model)},
      {"--epochs", integer(&t.epochs)},
      {"--batch", integer(&t.global_batch)},
      {"--optimizer", text(&t.optimizer.name)},
      {"--lr", real(&t.lr.base_lr)},
      {"--lr-reference-batch", integer(&t.lr.reference_batch)},
      {"--lr-schedule", text(&t.lr.kind)},
      {"--lr-step-epochs", real(&t.lr_step_epochs)},
      {"--lr-gamma", real(&t.lr.gamma)},
      {"--lr-power", real(&t.lr.power)},
      {"--warmup-epochs", real(&t.warmup_epochs)},
      {"--momentum", real(&t.optimizer.momentum)},
      {"--weight-decay", real(&t.optimizer.weight_decay)},
      {"--beta1", real(&t.optimizer.beta1)},
      {"--beta2", real(&t.optimizer.beta2)},
      {"--ranks", integer(&o.ranks)},
      {"--algo", text(&o.algo)},
      {"--bucket-mib", [&o](const std::string& f, const char* v) { return ToDouble(f, v, &o.bucket_mib); }},
      {"--data", text(&o.data_dir)},
      {"--train-limit", integer(&o.train_limit)},
      {"--test-limit", integer(&o.test_limit)},
      {"--max-steps", integer(&t.max_steps_per_epoch)},
      {"--seed", integer(&seed)},
      {"--blas-threads", integer(&o.blas_threads)},
      {"--csv", text(&o.csv_path)},
      {"--step-trace", text(&o.step_trace_path)},
      {"--kill-rank", integer(&o.elastic.kill_rank)},
      {"--kill-at-step", integer(&o.elastic.kill_at_step)},
      {"--warmup-steps", integer(&t.exchange.warmup_steps)},
      {"--momentum-sync", integer(&t.exchange.momentum_sync_steps)},
      {"--timed-after-steps", integer(&t.timed_after_steps)},
  };
  std::string mode = "sync";
  auto select_mode = [&mode](const char* name) -> std::function<chorus::Status()> {
    return [&mode, name]() {
      if (mode != "sync" && mode != name) {
        return chorus::InvalidArgument("--", mode, " and --", name, " are exclusive");
      }
      mode = name;
      return chorus::Status::Ok();
    };
  };
  auto set = [](bool* field) -> std::function<chorus::Status()> {
    return [field]() {
      *field = true;
      return chorus::Status::Ok();
    };
  };
  const std::map<std::string, std::function<chorus::Status()>> switches = {
      {"--overlap", select_mode("overlap")},
      {"--pipe-sgd", select_mode("pipe-sgd")},
      {"--gossip", select_mode("gossip")},
      {"--lion-cub", select_mode("lion-cub")},
      {"--fp16-wire", set(&t.exchange.fp16_wire)},
      {"--lion-cub-int8", set(&t.exchange.lion_cub_int8)},
      {"--elastic", set(&o.elastic.enabled)},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    const auto toggle = switches.find(flag);
    if (toggle != switches.end()) {
      CHORUS_RETURN_IF_ERROR(toggle->second());
      continue;
    }
    const auto found = flags.find(flag);
    if (found == flags.end()) return chorus::InvalidArgument("unknown option '", flag, "'\n", UsageText());
    if (i + 1 >= argc) return chorus::InvalidArgument(flag, " needs a value");
    CHORUS_RETURN_IF_ERROR(found->second(flag, argv[++i]));
  }
  if (o.algo != "auto" && o.algo != "ring" && o.algo != "tree" && o.algo != "ps" && o.algo != "hd" &&
      o.algo != "direct") {
    return chorus::InvalidArgument("--algo must be auto, ring, tree, ps, hd or direct, not '", o.algo, "'");
  }
  if (o.ranks < 1) return chorus::InvalidArgument("--ranks must be at least 1");
  if (t.epochs < 1 || t.global_batch < 1) return chorus::InvalidArgument("--epochs and --batch must be at least 1");
  if (t.exchange.lion_cub_int8) CHORUS_RETURN_IF_ERROR(select_mode("lion-cub")());
  if (t.exchange.fp16_wire && mode != "pipe-sgd") return chorus::InvalidArgument("--fp16-wire needs --pipe-sgd");
  if ((o.elastic.kill_rank >= 0) != (o.elastic.kill_at_step >= 0) || (o.elastic.kill_rank >= 0 && !o.elastic.enabled)) {
    return chorus::InvalidArgument("--kill-rank and --kill-at-step go together, with --elastic");
  }
  if (mode == "lion-cub") t.optimizer.name = "lion";
  t.exchange.mode = mode;
  if (o.elastic.enabled) CHORUS_RETURN_IF_ERROR(CheckElasticMode(t));
  if (o.elastic.enabled && !o.step_trace_path.empty()) {
    return chorus::InvalidArgument("--step-trace does not support --elastic (its ranks change mid-run)");
  }
  o.seed = static_cast<uint64_t>(seed);
  t.exchange.gossip_seed = o.seed;
  t.data_seed = o.seed + 1;
  t.bucket_bytes = static_cast<size_t>(o.bucket_mib * 1024.0 * 1024.0);
  *out = o;
  return chorus::Status::Ok();
}

}  // namespace trainer
