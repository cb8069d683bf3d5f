#!/usr/bin/env bash
# The ucx transport's own overhead: Chorus moving one message size between
# two ranks over CHORUS_TRANSPORT=ucx against UCX's own ucx_perftest tag_bw,
# with the same UCX_TLS, interleaved round by round on this host.
#
#   perf/ucx/ucx_vs_perftest.sh [--rounds N] [--size BYTES] [--tls LIST] [--build DIR]
#
# Per round: ucx_perftest tag_bw (one direction, server and client on
# loopback), Chorus's broadcast_perf on 2 ranks (one direction: the root
# sends, the other receives; out of place and in place) and sendrecv_perf on
# 2 ranks (each rank sends and receives at once; over loopback at most half
# of one direction's rate each way, see the end). The Chorus ranks are
# threads of one process (-t 2), each with its own UCP worker. Prints each
# round's MB/s, the medians, and the ratios of Chorus's bandwidth to
# ucx_perftest's.
set -euo pipefail

rounds=5
size=1048576
tls=tcp
build=build
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --tls) tls=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found (Debian's ucx-utils)" >&2; exit 2; }
for tool in broadcast_perf sendrecv_perf; do
  [ -x "$build/perf/$tool" ] || { echo "$build/perf/$tool is not built" >&2; exit 2; }
done

iters=$(( (200 << 20) / size ))  # about 200 MiB a measurement
[ "$iters" -ge 20 ] || iters=20

# MB/s (10^6 bytes per second) of ucx_perftest tag_bw at $size, one direction.
perftest_mbs() {
  local port=$((20000 + RANDOM % 20000)) server out
  UCX_TLS=$tls timeout 120 ucx_perftest -p "$port" >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  out=$(UCX_TLS=$tls timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t tag_bw -s "$size" -n "$iters" -w 20 -f 2>&1)
  wait "$server" || true
  # The result line: iterations, overhead (50%, average, overall), then
  # bandwidth in MiB/s (average, overall), then the message rate.
  echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF >= 7 { mibs = $6 } END { if (mibs == "") exit 1; printf "%.0f\n", mibs * 1.048576 }'
}

# MB/s one direction of a Chorus perf tool at $size: bytes over the time
# per call, out of place and in place ("OUT IN"). Out of place, a broadcast's
# root also copies its send buffer into its receive buffer, which
# ucx_perftest does not; in place it moves exactly what ucx_perftest moves.
chorus_mbs() {
  local tool=$1
  UCX_TLS=$tls CHORUS_TRANSPORT=ucx "$build/perf/$tool" -t 2 -b "$size" -e "$size" -n "$iters" -w 20 2>&1 |
    awk -v size="$size" '$1 == size { printf "%.0f %.0f\n", size / $6, size / $10; found = 1 } END { if (!found) exit 1 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# $size bytes, UCX_TLS=$tls, $iters iterations, $rounds rounds; MB/s = 10^6 B/s"
row() { printf '%-6s %14s %18s %18s %28s\n' "$@"; }
row round ucx_perftest broadcast_out broadcast_in "sendrecv_out (each way)"
perftest=() broadcast=() broadcast_in=() sendrecv=()
for round in $(seq 1 "$rounds"); do
  p=$(perftest_mbs)
  read -r b bi < <(chorus_mbs broadcast_perf)
  read -r s _ < <(chorus_mbs sendrecv_perf)
  perftest+=("$p") broadcast+=("$b") broadcast_in+=("$bi") sendrecv+=("$s")
  row "$round" "$p" "$b" "$bi" "$s"
done
mp=$(printf '%s\n' "${perftest[@]}" | median)
mb=$(printf '%s\n' "${broadcast[@]}" | median)
mbi=$(printf '%s\n' "${broadcast_in[@]}" | median)
ms=$(printf '%s\n' "${sendrecv[@]}" | median)
row median "$mp" "$mb" "$mbi" "$ms"
# Ratio of medians and median of the rounds' ratios, of column $1 to ucx_perftest.
ratio() {
  local -n column=$1
  local median_of=$2 ratios
  ratios=$(for i in "${!perftest[@]}"; do echo "${column[$i]} ${perftest[$i]}" | awk '{ printf "%.3f\n", $1 / $2 }'; done)
  echo "ratio of medians $(echo "$median_of $mp" | awk '{ printf "%.2f", $1 / $2 }'), median of round ratios $(echo "$ratios" | median)"
}
echo "chorus broadcast out of place / ucx_perftest: $(ratio broadcast "$mb")"
echo "chorus broadcast in place / ucx_perftest: $(ratio broadcast_in "$mbi")"
# sendrecv moves the size both ways at once. Over loopback a CPU copies every
# byte at both ends (into the sender's socket, out of the receiver's), so
# with one core per rank both ways at once take twice one direction's CPU
# time: each way's rate is at most half of ucx_perftest's one-direction rate.
echo "chorus sendrecv each way / ucx_perftest: $(ratio sendrecv "$ms") (at most 0.5 when the copies fill the cores)"
