#!/usr/bin/env bash
# The ibverbs transport against perftest's ib_write_bw on the same RDMA
# device, interleaved round by round: both directions at once at one message
# size, for Chorus's staged path (buffers not registered: staging slot ->
# RDMA write -> receive slot -> copy out) and its direct path (buffers
# registered with chorusCommRegister, sendrecv_perf -R 1: one RDMA write
# straight from the send buffer into the receive buffer).
#
#   perf/ib/ib_vs_perftest.sh [--rounds N] [--size BYTES] [--iters N] [--build DIR]
#
# Where this host has no RDMA device it runs itself in the soft-RoCE guest
# (scripts/rdma-vm.sh, docs/rdma.md). Per round: ib_write_bw -b (both
# directions), then sendrecv_perf -t 2 over CHORUS_TRANSPORT=ibverbs without
# and with -R 1 (each rank sends and receives one message at once), then
# all_reduce_perf -t 2 of 4x the size without and with -R 1. Prints each
# round's MB/s (10^6 B/s, both directions together) and allreduce time per
# call (ms), the medians, and the ratios.
set -euo pipefail

rounds=3
size=1048576
iters=40
build=build
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$build/perf/sendrecv_perf" ] || { echo "$build/perf/sendrecv_perf is not built" >&2; exit 2; }

if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  exec "$root/scripts/rdma-vm.sh" --timeout $((300 + rounds * 240)) -- \
    bash "$root/perf/ib/ib_vs_perftest.sh" --rounds "$rounds" --size "$size" --iters "$iters" --build "$build"
fi
command -v ib_write_bw >/dev/null || { echo "ib_write_bw not found (Debian's perftest)" >&2; exit 2; }
device=${RDMA_VM_DEVICE:-$(ls /sys/class/infiniband | head -1)}
gid=${RDMA_VM_GID_INDEX:-${CHORUS_IB_GID_INDEX:-0}}

# MB/s of ib_write_bw -b at $size, both directions together (perftest's
# MB/sec is 2^20 B/s).
perftest_mbs() {
  local server out
  timeout 300 ib_write_bw -d "$device" -x "$gid" -s "$size" -n "$iters" -F -b >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 300); do
    ss -ltn 2>/dev/null | grep -q ':18515 ' && break
    sleep 0.1
  done
  out=$(timeout 300 ib_write_bw -d "$device" -x "$gid" -s "$size" -n "$iters" -F -b 127.0.0.1 2>&1)
  wait "$server" || true
  echo "$out" | awk -v size="$size" '$1 == size { printf "%.1f\n", $4 * 1.048576; found = 1 } END { if (!found) exit 1 }'
}

# MB/s of sendrecv_perf at $size, both directions together: each rank sends
# and receives $size per call. $1: -R value.
chorus_mbs() {
  CHORUS_TRANSPORT=ibverbs CHORUS_IB_GID_INDEX=$gid "$build/perf/sendrecv_perf" -t 2 -b "$size" -e "$size" \
    -n "$iters" -w 3 -R "$1" 2>&1 |
    awk -v size="$size" '$1 == size { printf "%.1f\n", 2 * size / $6; found = 1 } END { if (!found) exit 1 }'
}

# Time per call (ms) of all_reduce_perf at 4x $size, out of place. $1: -R value.
allreduce_ms() {
  CHORUS_TRANSPORT=ibverbs CHORUS_IB_GID_INDEX=$gid "$build/perf/all_reduce_perf" -t 2 -b $((4 * size)) \
    -e $((4 * size)) -n "$((iters / 4 + 1))" -w 2 -R "$1" 2>&1 |
    awk -v size=$((4 * size)) '$1 == size { printf "%.1f\n", $6 / 1000; found = 1 } END { if (!found) exit 1 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# $size bytes on $device (GID $gid), $iters iterations, $rounds rounds; MB/s = 10^6 B/s, both directions;"
echo "# allreduce: $((4 * size)) bytes, ms per call"
row() { printf '%-6s %16s %16s %16s %18s %18s\n' "$@"; }
row round "ib_write_bw -b" "sendrecv staged" "sendrecv -R 1" "allreduce staged" "allreduce -R 1"
perftest=() staged=() direct=() ar_staged=() ar_direct=()
for round in $(seq 1 "$rounds"); do
  p=$(perftest_mbs)
  s=$(chorus_mbs 0)
  d=$(chorus_mbs 1)
  as=$(allreduce_ms 0)
  ad=$(allreduce_ms 1)
  perftest+=("$p") staged+=("$s") direct+=("$d") ar_staged+=("$as") ar_direct+=("$ad")
  row "$round" "$p" "$s" "$d" "$as" "$ad"
done
med() { local -n column=$1; printf '%s\n' "${column[@]}" | median; }
mp=$(med perftest) ms=$(med staged) md=$(med direct) mas=$(med ar_staged) mad=$(med ar_direct)
row median "$mp" "$ms" "$md" "$mas" "$mad"
ratio() { echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 }'; }
echo "sendrecv staged / ib_write_bw -b: $(ratio "$ms" "$mp")"
echo "sendrecv -R 1 / ib_write_bw -b: $(ratio "$md" "$mp")"
echo "sendrecv -R 1 / staged: $(ratio "$md" "$ms")"
echo "allreduce time, staged / -R 1: $(ratio "$mas" "$mad")"
