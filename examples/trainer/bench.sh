#!/usr/bin/env bash
# Reproduces the reference trainer's targets (docs/trainer.md, "The benchmark set") and
# writes a results table and accuracy-vs-time plots.
#
#   examples/trainer/bench.sh [--quick] [--epochs N] [--only a,b,c,d]
#                             [--build DIR] [--out DIR] [--cluster-steps N]
#
#  a  LeNet, sync SGD, 2 ranks: test accuracy >= 89 % within <= 10 epochs
#  b  1, 2 and 4 ranks, same global batch and epochs: final test accuracies
#     within 0.7 points of each other
#  c  gossip, pipe-sgd, lion-cub (2 ranks): each within 1.5 points of sync
#  d  emulated cluster (perf/cluster/cluster.sh: 4 hosts, 1 Gbit/s; root):
#     lion-cub 1-bit >= 25x fewer gradient bytes and >= 2x shorter steps than
#     float32 Lion; pipe-sgd steps <= 0.65x of sync's when communication
#     and computation take about the same time (also: pipe-sgd with its
#     fp16 wire, and both ratios over the steps after the 10 warm-up steps;
#     and, not judged, sync vs pipe-sgd on 2 hosts at the same batch per rank:
#     hosts no longer share cores, though each host's network stack still
#     runs on its one core)
#
# Default: full Fashion-MNIST, 5 epochs. --quick: 1 epoch on the first 12,000
# training and 2,000 test images, 40 cluster steps (checks the pipeline; its
# accuracies do not meet the targets). Runs one job at a time. Writes
# OUT/results.md (the table), OUT/*.csv (per run), OUT/*.log,
# OUT/ranks.png and OUT/modes.png (defaults: --build <repo>/build, --out
# bench-trainer). Exit status 0 even when a target is
# missed (the table says so); 1 when a run fails.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
out=bench-trainer
epochs=5
quick=0
parts=a,b,c,d
cluster_steps=150
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --epochs) epochs=$2; shift ;;
    --only) parts=$2; shift ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --cluster-steps) cluster_steps=$2; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "bench: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done
limits=()
if [ $quick -eq 1 ]; then
  epochs=1
  cluster_steps=40
  limits=(--train-limit 12000 --test-limit 2000)
fi
trainer=$build/examples/trainer/chorus_trainer
[ -x "$trainer" ] || { echo "bench: $trainer not built (ninja -C $build examples/trainer/chorus_trainer)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
want() { [[ ",$parts," == *",$1,"* ]]; }

# The schedule of docs/trainer.md's measured runs: global batch 64, poly decay.
# Lion (float32 or Lion Cub) with its own learning rate.
sgd_opt=(--model lenet --algo ring --lr 0.02 --lr-schedule poly --momentum 0.9 --weight-decay 5e-4)
lion_opt=(--model lenet --algo ring --lr 0.0002 --lr-schedule poly)
sgd=("${sgd_opt[@]}" --batch 64 --epochs "$epochs" "${limits[@]}")
lion=("${lion_opt[@]}" --batch 64 --epochs "$epochs" "${limits[@]}")

# run NAME ARGS...: one local run (--ranks in ARGS), CSV and log in OUT.
run() {
  local name=$1
  shift
  rm -f "$out/$name.csv"
  echo "bench: $name: chorus_trainer $*" >&2
  if ! "$trainer" "$@" --csv "$out/$name.csv" >"$out/$name.log" 2>&1; then
    echo "bench: $name failed, see $out/$name.log" >&2
    exit 1
  fi
}

# column CSV NAME: the named column of the last row.
column() {
  awk -F, -v want="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == want) c = i; next } { v = $c } END { print v }' "$1"
}
accuracy() { awk -v a="$(column "$1" test_accuracy)" 'BEGIN { printf "%.2f", 100 * a }'; }
verdict() { awk "BEGIN { exit !($1) }" && echo met || echo "**not met**"; }

table=$out/results.md
{
  echo "| target | runs | measured | result |"
  echo "| --- | --- | --- | --- |"
} >"$table"
row() { echo "| $1 | $2 | $3 | $4 |" >>"$table"; }

if want a || want b || want c; then run sync-2 "${sgd[@]}" --ranks 2; fi
if want a; then
  best=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "test_accuracy") c = i; next }
                  { if (100 * $c > b) { b = 100 * $c; e = NR - 1 } } END { printf "%.2f %d", b, e }' "$out/sync-2.csv")
  row "(a) LeNet sync, 2 ranks: >= 89 % in <= 10 epochs" "sync-2 ($epochs epochs)" \
      "best ${best% *} % at epoch ${best#* }" "$(verdict "${best% *} >= 89 && $epochs <= 10")"
fi
if want b; then
  run sync-1 "${sgd[@]}" --ranks 1
  run sync-4 "${sgd[@]}" --ranks 4
  a1=$(accuracy "$out/sync-1.csv") a2=$(accuracy "$out/sync-2.csv") a4=$(accuracy "$out/sync-4.csv")
  spread=$(printf '%s\n' "$a1" "$a2" "$a4" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f", hi - lo }')
  row "(b) 1/2/4 ranks within 0.7 points" "sync-1, sync-2, sync-4" "$a1 / $a2 / $a4 %, spread $spread" \
      "$(verdict "$spread <= 0.7")"
  "$root/examples/trainer/plot_accuracy.sh" -t "LeNet, sync SGD, global batch 64" "$out/ranks.png" \
      "$out/sync-1.csv=1 rank" "$out/sync-2.csv=2 ranks" "$out/sync-4.csv=4 ranks"
fi
if want c; then
  run gossip-2 "${sgd[@]}" --ranks 2 --gossip
  run pipe-sgd-2 "${sgd[@]}" --ranks 2 --pipe-sgd
  run lion-cub-2 "${lion[@]}" --ranks 2 --lion-cub
  base=$(accuracy "$out/sync-2.csv")
  for mode in gossip pipe-sgd lion-cub; do
    acc=$(accuracy "$out/$mode-2.csv")
    gap=$(awk "BEGIN { printf \"%.2f\", $base - $acc }")
    row "(c) $mode within 1.5 points of sync" "$mode-2 vs sync-2" "$acc % vs $base % (sync - mode = $gap)" \
        "$(verdict "$gap <= 1.5 && $gap >= -1.5")"
  done
  "$root/examples/trainer/plot_accuracy.sh" -t "LeNet, 2 ranks, communication modes" "$out/modes.png" \
      "$out/sync-2.csv=sync" "$out/gossip-2.csv=gossip" "$out/pipe-sgd-2.csv=pipe-sgd" \
      "$out/lion-cub-2.csv=lion-cub (1-bit)"
fi

# Cluster runs (cluster NAME HOSTS ARGS...): one rank per emulated host, one epoch of --cluster-steps
# steps, BLAS single-threaded. Each rank prints the bytes its eth0 sent
# (/proc/net/dev inside its namespace: everything on the wire, TCP included).
# The 1-minute load average when each cluster run starts: on a shared
# machine the pipe-sgd/sync ratio moves with it (docs/trainer.md).
declare -A load_at_start
cluster() {
  local name=$1 hosts=$2
  shift 2
  rm -f "$out/$name.csv"
  load_at_start[$name]=$(cut -d' ' -f1 /proc/loadavg)
  echo "bench: $name: cluster.sh -n $hosts -- chorus_trainer $*" >&2
  "$root/perf/cluster/cluster.sh" -n "$hosts" -t 600 -- bash -c \
    'tx() { awk "/eth0:/ { sub(/.*:/, \"\"); print \$9 }" /proc/net/dev; }
     before=$(tx); "$@"; rc=$?; echo "eth0_tx_bytes $(( $(tx) - before ))"; exit $rc' _ \
    "$trainer" "$@" --epochs 1 --max-steps "$cluster_steps" "${limits[@]}" --test-limit 1000 --blas-threads 1 \
    --csv "$out/$name.csv" >"$out/$name.log" 2>&1
}
# ms per step and MB of gradient payload per rank, from the CSV; link bytes
# per rank (mean over the hosts) from the log.
step_ms() { awk -v s="$(column "$1" seconds)" -v n="$(column "$1" steps)" 'BEGIN { printf "%.1f", 1e3 * s / n }'; }
steady_ms() { awk -v s="$(column "$1" steady_seconds)" -v n="$(column "$1" steady_steps)" 'BEGIN { printf "%.1f", 1e3 * s / n }'; }
# step_ratios SYNC_CSV MODE_CSV: both modes' ms per step and their ratio,
# over all steps and from step 11 on.
step_ratios() {
  local ms mo ss so
  ms=$(step_ms "$1") mo=$(step_ms "$2") ss=$(steady_ms "$1") so=$(steady_ms "$2")
  echo "all steps: $mo vs $ms ms/step: $(awk "BEGIN { printf \"%.2f\", $mo / $ms }")x; steps 11-: $so vs $ss ms/step: $(awk "BEGIN { printf \"%.2f\", $so / $ss }")x"
}
time_split() { echo "$(column "$1" compute_seconds) s compute / $(column "$1" communication_seconds) s comm"; }
link_mb() { awk '/eth0_tx_bytes/ { s += $NF; n++ } END { printf "%.1f", s / n / 1e6 }' "$1"; }
if want d; then
  cluster_batch=${CLUSTER_BATCH:-16}
  # 192: where sync's computation and communication take the same time on
  # 4 emulated hosts since the trainer's compute got 26% cheaper (it was 128).
  pipe_batch=${PIPE_BATCH:-192}
  cluster lion-f32 4 "${lion_opt[@]}" --batch "$cluster_batch" --optimizer lion
  rc_lion=$?
  cluster lion-cub 4 "${lion_opt[@]}" --batch "$cluster_batch" --lion-cub
  rc_cub=$?
  # Steps from 11 on are timed apart too (CSV steady_*): pipe-sgd's first 10
  # are its synchronous warm-up.
  cluster sync-c 4 "${sgd_opt[@]}" --batch "$pipe_batch" --timed-after-steps 10
  rc_sync=$?
  cluster pipe-sgd-c 4 "${sgd_opt[@]}" --batch "$pipe_batch" --pipe-sgd --warmup-steps 10 --timed-after-steps 10
  rc_pipe=$?
  cluster pipe-fp16-c 4 "${sgd_opt[@]}" --batch "$pipe_batch" --pipe-sgd --warmup-steps 10 --fp16-wire \
    --timed-after-steps 10
  rc_pipe=$((rc_pipe + $?))
  # The control: 2 hosts at the same 48 images per rank, where the link
  # (2 x 1/2 of the gradient per rank instead of 2 x 3/4) and the
  # computation again take about the same time, but on a 2-core machine each
  # host has a core of its own (its kernel's TCP work still runs on it).
  pipe2_batch=${PIPE2_BATCH:-$((pipe_batch / 2))}
  cluster sync-h2 2 "${sgd_opt[@]}" --batch "$pipe2_batch" --timed-after-steps 10
  rc_pipe=$((rc_pipe + $?))
  cluster pipe-sgd-h2 2 "${sgd_opt[@]}" --batch "$pipe2_batch" --pipe-sgd --warmup-steps 10 --timed-after-steps 10
  rc_pipe=$((rc_pipe + $?))
  if [ $rc_lion -eq 77 ]; then
    row "(d) emulated cluster" "-" "skipped: perf/cluster/cluster.sh needs root" "not run"
  elif [ $((rc_lion + rc_cub + rc_sync + rc_pipe)) -ne 0 ]; then
    echo "bench: a cluster run failed, see $out/*.log" >&2
    exit 1
  else
    gf=$(column "$out/lion-f32.csv" gradient_bytes) gc=$(column "$out/lion-cub.csv" gradient_bytes)
    ratio=$(awk "BEGIN { printf \"%.1f\", $gf / $gc }")
    lf=$(link_mb "$out/lion-f32.log") lc=$(link_mb "$out/lion-cub.log")
    row "(d) lion-cub >= 25x fewer gradient bytes than float32 Lion" "lion-f32, lion-cub" \
        "$(awk "BEGIN { printf \"%.2f vs %.2f\", $gf / 1e6, $gc / 1e6 }") MB per rank: ${ratio}x (all link bytes incl. momentum sync and TCP: $lf vs $lc MB, $(awk "BEGIN { printf \"%.1f\", $lf / $lc }")x)" \
        "$(verdict "$ratio >= 25")"
    mf=$(step_ms "$out/lion-f32.csv") mc=$(step_ms "$out/lion-cub.csv")
    row "(d) lion-cub step >= 2x shorter than float32 Lion" "lion-f32, lion-cub (batch $cluster_batch)" \
        "$mf vs $mc ms/step: $(awk "BEGIN { printf \"%.2f\", $mf / $mc }")x" "$(verdict "$mf >= 2 * $mc")"
    ms=$(step_ms "$out/sync-c.csv") mp=$(step_ms "$out/pipe-sgd-c.csv")
    row "(d) pipe-sgd step <= 0.65x of sync" "sync-c, pipe-sgd-c (4 hosts on $(nproc) cores, batch $pipe_batch; sync: $(time_split "$out/sync-c.csv"); load average ${load_at_start[sync-c]} / ${load_at_start[pipe-sgd-c]})" \
        "$(step_ratios "$out/sync-c.csv" "$out/pipe-sgd-c.csv")" "$(verdict "$mp <= 0.65 * $ms") (all steps)"
    row "(d) pipe-sgd --fp16-wire (optional wire), same runs" "sync-c, pipe-fp16-c (load average ${load_at_start[pipe-fp16-c]})" \
        "$(step_ratios "$out/sync-c.csv" "$out/pipe-fp16-c.csv")" "-"
    row "(d) control, not judged: pipe-sgd vs sync on 2 hosts ($(nproc) cores; the target is 4 hosts)" "sync-h2, pipe-sgd-h2 (batch $pipe2_batch; sync: $(time_split "$out/sync-h2.csv"); load average ${load_at_start[sync-h2]} / ${load_at_start[pipe-sgd-h2]})" \
        "$(step_ratios "$out/sync-h2.csv" "$out/pipe-sgd-h2.csv")" "-"
  fi
fi
cat "$table"
