#!/usr/bin/env bash
# DDP training throughput, gloo vs chorus: examples/torch_ddp/train.py run
# with --backend gloo and --backend chorus (nothing else differs), alternated.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: perf/torch/ddp_bench.sh [--nprocs "2 4"] [--pairs 3] [--epochs 1] [--max-steps N]
                               [--build DIR] [--log FILE] [-- extra train.py options]

Measures DistributedDataParallel training of examples/torch_ddp/train.py (LeNet,
Fashion-MNIST, CPU, 64 images per rank per step, one torch thread per rank)
with the gloo and the chorus backend. For each process count it runs the
script alternately, gloo, chorus, gloo, chorus, ... (--pairs pairs), so load
from elsewhere on the machine falls on both backends alike, and prints:

  nproc, backend, images/s of every run (training steps after the warm-up,
  all ranks' images over the slowest rank's wall time), their median, the
  test accuracy (%) after training (median of the runs), and per process
  count the ratio chorus/gloo of the median images/s and the accuracy
  difference chorus - gloo (targets: ratio >= 1.25, |difference| <= 0.3).

Defaults: --nprocs "2 4", --pairs 3, --epochs 1 (468 steps at 2 processes,
234 at 4); a full run took 5 to 8 minutes on a 2-core machine that other
jobs were loading (12 runs; each also pays ~8 s of start-up). --build DIR is
the Meson build whose python/ holds torch_chorus (default: build).
Runs with Debian's torch: /usr/bin/python3 (override with PYTHON=...).
--log FILE keeps every run's output.
EOF
}

here=$(cd "$(dirname "$0")/../.." && pwd)
nprocs="2 4"
pairs=3
epochs=1
max_steps=0
build="$here/build"
log=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --nprocs) nprocs="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --max-steps) max_steps="$2"; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --log) log="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "ddp_bench.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
python=${PYTHON:-/usr/bin/python3}
run_timeout=${RUN_TIMEOUT:-600}  # seconds; a run that hangs fails the benchmark
if [[ ! -d "$build/python/torch_chorus" ]]; then
  echo "ddp_bench.sh: $build/python/torch_chorus missing: build with 'ninja -C ${build#"$here"/}'" >&2
  exit 1
fi
[[ -n "$log" ]] && : >"$log"

results=$(mktemp)
trap 'rm -f "$results"' EXIT

echo "# examples/torch_ddp/train.py --epochs $epochs --max-steps $max_steps ${extra[*]:-}"
# The commit torch_chorus was built from ("+changes": the backend's sources
# differed from it), from the build's record of its source directory.
source_dir=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
               "$build/meson-info/meson-info.json" 2>/dev/null || echo "")
built_from="?"
if [[ -n "$source_dir" ]] && built_from=$(git -C "$source_dir" rev-parse --short HEAD 2>/dev/null); then
  git -C "$source_dir" diff --quiet HEAD -- python src transports include algorithms 2>/dev/null || built_from+="+changes"
fi
echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $("$python" -c 'import torch; print("torch", torch.__version__)'), $(date -u '+%Y-%m-%d %H:%M UTC'), script git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), torch_chorus from $build (git $built_from)"
for n in $nprocs; do
  for ((i = 1; i <= pairs; i++)); do
    for backend in gloo chorus; do
      out=$(PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" timeout "$run_timeout" \
              "$python" "$here/examples/torch_ddp/train.py" \
              --nproc "$n" --backend "$backend" --epochs "$epochs" --max-steps "$max_steps" "${extra[@]}" 2>&1) || {
        echo "ddp_bench.sh: $backend with $n processes failed:" >&2
        echo "$out" | tail -20 >&2
        exit 1
      }
      [[ -n "$log" ]] && printf '%s\n' "$out" >>"$log"
      line=$(printf '%s\n' "$out" | grep '^DDP_RESULT ' | tail -1)
      [[ -n "$line" ]] || { echo "ddp_bench.sh: no DDP_RESULT line from $backend with $n processes" >&2; exit 1; }
      echo "#   run $i $backend nproc=$n: ${line#DDP_RESULT }" >&2
      echo "$line" >>"$results"
    done
  done
done

echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v order="$nprocs" '
  function field(name,   i, kv) {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
  }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    key = field("nproc") SUBSEP field("backend")
    ips[key] = ips[key] (ips[key] == "" ? "" : " ") field("images_per_s")
    acc[key] = acc[key] (acc[key] == "" ? "" : " ") field("test_accuracy")
    steps[field("nproc")] = field("steps")
  }
  END {
    printf "%-6s %-7s %-6s %-34s %10s %9s\n", "nproc", "backend", "steps", "images/s per run", "median", "test_acc"
    n = split(order, ps, " ")
    for (k = 1; k <= n; k++) {
      p = ps[k]
      for (b = 1; b <= 2; b++) {
        name = b == 1 ? "gloo" : "chorus"
        key = p SUBSEP name
        m[name] = median(ips[key]); a[name] = median(acc[key])
        printf "%-6s %-7s %-6s %-34s %10.1f %9.2f\n", p, name, steps[p], ips[key], m[name], a[name]
      }
      ratio = m["chorus"] / m["gloo"]; diff = a["chorus"] - a["gloo"]
      speed = (ratio >= 1.25) ? "met" : "missed"
      near = (diff <= 0.3 && diff >= -0.3) ? "met" : "missed"
      printf "%-6s chorus/gloo images/s %.3f (target >= 1.25: %s), test accuracy %+.2f points (target within 0.3: %s)\n", p, ratio, speed, diff, near
    }
  }' "$results"
