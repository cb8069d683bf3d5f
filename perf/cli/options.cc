#include "perf/cli/options.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace chorus::perf {

namespace {

// --cudagraph has no short form here: nccl-tests' -G (CUDA graph launches)
// is -G 0/1, device buffers, in these CLIs.
constexpr int kCudaGraphOption = 1000;

constexpr struct option kLongOptions[] = {
    {"nthreads", required_argument, nullptr, 't'},   {"ngpus", required_argument, nullptr, 'g'},
    {"minbytes", required_argument, nullptr, 'b'},   {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},  {"stepfactor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},      {"agg_iters", required_argument, nullptr, 'm'},
    {"warmup_iters", required_argument, nullptr, 'w'}, {"run_cycles", required_argument, nullptr, 'N'},
    {"parallel_init", required_argument, nullptr, 'p'}, {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},         {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},       {"blocking", required_argument, nullptr, 'z'},
    {"stream_null", required_argument, nullptr, 'y'}, {"timeout", required_argument, nullptr, 'T'},
    {"device_buffers", required_argument, nullptr, 'G'}, {"report_cputime", required_argument, nullptr, 'C'},
    {"cudagraph", required_argument, nullptr, kCudaGraphOption},
    {"average", required_argument, nullptr, 'a'},    {"local_register", required_argument, nullptr, 'R'},
    {"algo", required_argument, nullptr, 'A'},       {"output_file", required_argument, nullptr, 'J'},
    {"help", no_argument, nullptr, 'h'},             {nullptr, 0, nullptr, 0},
};
constexpr const char* kShortOptions = "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:a:R:A:J:h";

// Whole-string integer parse; nccl-tests uses strtol with base 0 too.
bool ParseInt(const char* text, long min, long max, long* value) {
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || parsed < min || parsed > max) return false;
  *value = parsed;
  return true;
}

bool SetInt(const char* text, long min, long max, int* out) {
  long value = 0;
  if (!ParseInt(text, min, max, &value)) return false;
  *out = static_cast<int>(value);
  return true;
}

}  // namespace

bool ParseSize(const char* text, size_t* bytes) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (errno != 0 || end == text || !(value >= 0)) return false;
  double unit = 1;
  if (*end != '\0') {
    switch (*end) {
      case 'K': case 'k': unit = 1024.0; break;
      case 'M': case 'm': unit = 1024.0 * 1024; break;
      case 'G': case 'g': unit = 1024.0 * 1024 * 1024; break;
      default: return false;
    }
    if (end[1] != '\0' && !(std::strchr("Bb", end[1]) && end[2] == '\0')) return false;
  }
  const double total = value * unit;
  if (total > 1e18) return false;
  *bytes = static_cast<size_t>(total);
  return true;
}

ParseOutcome ParseOptions(int argc, char** argv, Options* options, std::string* error) {
  optind = 1;
  opterr = 0;  // we print our own message
  int opt = 0;
  long value = 0;
  while ((opt = getopt_long(argc, argv, kShortOptions, kLongOptions, nullptr)) != -1) {
    bool ok = true;
    switch (opt) {
      case 't': ok = SetInt(optarg, 1, 4096, &options->threads); break;
      case 'g': ok = SetInt(optarg, 1, 4096, &options->gpus); break;
      case 'b': ok = ParseSize(optarg, &options->min_bytes); break;
      case 'e': ok = ParseSize(optarg, &options->max_bytes); break;
      case 'i': ok = ParseSize(optarg, &options->step_bytes); break;
      case 'f':
        ok = ParseInt(optarg, 0, 1 << 20, &value);
        options->step_factor = static_cast<size_t>(value);
        break;
      case 'n': ok = SetInt(optarg, 1, 1 << 30, &options->iters); break;
      case 'm': ok = SetInt(optarg, 1, 1 << 20, &options->agg_iters); break;
      case 'w': ok = SetInt(optarg, 0, 1 << 30, &options->warmup_iters); break;
      case 'N': ok = SetInt(optarg, 0, 1 << 30, &options->run_cycles); break;
      case 'c': ok = SetInt(optarg, 0, 1 << 20, &options->check); break;
      case 'p': case kCudaGraphOption: ok = ParseInt(optarg, 0, 1 << 30, &value); break;  // no meaning here
      case 'G':
        ok = ParseInt(optarg, 0, 1, &value);
        options->device_buffers = value == 1;
        break;
      case 'R':
        ok = ParseInt(optarg, 0, 2, &value);
        options->local_register = value >= 1;
        break;
      case 'o': {
        auto ops = ParseOps(optarg);
        ok = ops.has_value();
        if (ok) options->ops = *ops;
        break;
      }
      case 'd': {
        auto types = ParseTypes(optarg);
        ok = types.has_value();
        if (ok) options->types = *types;
        break;
      }
      case 'r':
        if (std::strcmp(optarg, "all") == 0) {
          options->root = -1;
        } else {
          ok = SetInt(optarg, 0, 1 << 30, &options->root);
        }
        break;
      case 'z': case 'y':
        ok = ParseInt(optarg, 0, 1, &value);
        options->blocking = options->blocking || value == 1;
        break;
      case 'T': ok = SetInt(optarg, 0, 1 << 20, &options->timeout_s); break;
      case 'C':
        ok = ParseInt(optarg, 0, 1, &value);
        options->report_cputime = value == 1;
        break;
      case 'a': ok = SetInt(optarg, 0, 3, &options->average); break;
      case 'A': options->algo = optarg; break;
      case 'J': options->json_path = optarg; break;
      case 'h': return ParseOutcome::kHelp;
      default:
        *error = optopt != 0 ? std::string("invalid option '-") + static_cast<char>(optopt) + "'"
                             : std::string("invalid option '") + argv[optind - 1] + "'";
        return ParseOutcome::kError;
    }
    if (!ok) {
      *error = std::string("invalid value '") + optarg + "' for option '-" + static_cast<char>(opt) + "'";
      return ParseOutcome::kError;
    }
  }
  if (optind < argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return ParseOutcome::kError;
  }
  if (options->min_bytes > options->max_bytes) {
    *error = "invalid sizes for 'minbytes' and 'maxbytes': " + std::to_string(options->min_bytes) + " > " +
             std::to_string(options->max_bytes);
    return ParseOutcome::kError;
  }
  if (options->step_factor <= 1 && options->step_bytes == 0) {
    *error = "'stepbytes' must be > 0 when 'stepfactor' is <= 1";
    return ParseOutcome::kError;
  }
  return ParseOutcome::kRun;
}

std::string UsageText(const char* program) {
  const char* base = std::strrchr(program, '/');
  std::string text = std::string("USAGE: ") + (base ? base + 1 : program) + " \n";
  text +=
      "\t[-t,--nthreads <num threads>] ranks as threads of this process\n"
      "\t[-g,--ngpus <ranks per thread>] \n"
      "\t[-b,--minbytes <min size in bytes>] (K/M/G suffixes)\n"
      "\t[-e,--maxbytes <max size in bytes>] \n"
      "\t[-i,--stepbytes <increment size>] \n"
      "\t[-f,--stepfactor <increment factor>] \n"
      "\t[-n,--iters <iteration count>] \n"
      "\t[-m,--agg_iters <aggregated iteration count>] \n"
      "\t[-w,--warmup_iters <warmup iteration count>] \n"
      "\t[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n"
      "\t[-p,--parallel_init <0/1>] (accepted; ranks always initialise in parallel)\n"
      "\t[-c,--check <check iteration count>] \n"
      "\t[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n"
      "\t[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/all>] \n"
      "\t[-r,--root <root/all>] \n"
      "\t[-z,--blocking <0/1>] 1: NULL stream, every call blocks\n"
      "\t[-y,--stream_null <0/1>] same as -z\n"
      "\t[-T,--timeout <time in seconds>] deadline of every wait\n"
      "\t[-G,--device_buffers <0/1>] 1: buffers in CUDA device memory (CUDA builds)\n"
      "\t[--cudagraph <num graph launches>] (accepted, ignored)\n"
      "\t[-C,--report_cputime <0/1>] \n"
      "\t[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n"
      "\t[-R,--local_register <1/0>] 1: register the buffers with chorusCommRegister\n"
      "\t[-A,--algo <algorithm>] as CHORUS_ALGO (e.g. ring, tree)\n"
      "\t[-J,--output_file <file>] write the results as JSON\n"
      "\t[-h,--help]\n"
      "Launch: -t N runs N ranks as threads; under mpirun (MPI build), srun or\n"
      "torchrun-style variables (WORLD_SIZE, MASTER_ADDR, ...) one rank per process.\n";
  return text;
}

}  // namespace chorus::perf
