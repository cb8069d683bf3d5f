#!/usr/bin/env bash
# Network chaos: randomized link faults in the emulated cluster of
# perf/cluster/cluster.sh (one rank per host over TCP). Each trial runs
# perf/chaos/link_chaos_rank on every host (checked collectives for a few
# seconds; with --shrink, half the trials shrink after the first failure)
# while perf/chaos/link_fault.sh strikes one random host at a random moment:
# its link down (inside the host or at the switch), starved to 8 kbit/s,
# blackholed (bridge port disabled: 100% loss, carrier up) or 100% netem
# loss (skipped where the kernel has no sch_netem); some faults are
# repaired after a delay shorter or longer than the deadline.
# Prints the counts of each fault and outcome, which rank the survivors'
# errors name, and the slowest failing call against the deadline. Exits
# non-zero on any wrong result, hang (a rank killed by the cluster's
# timeout), crash (a rank ended by a signal), failure with an unexpected
# code or naming no peer, call failing later than the deadline plus the
# slack, two shrunk communicators in one trial, or leaked shared-memory
# segment.
#
#   perf/chaos/link_chaos.sh [--trials N] [--seed S] [--hosts H] [--build DIR]
#       [--timeout-ms T] [--slack-ms M] [--seconds S] [--kinds k1,k2,...]
#       [--heartbeat-ms P] [--shrink random|always|never] [--logs DIR]
#
# Defaults: 20 trials, 4 hosts, CHORUS_TIMEOUT_MS=3000, slack 2000 ms, 8 s
# of collectives per trial, every kind, no heartbeat, shrink in half the
# trials, seed from the clock (printed, so a run can be replayed). Each
# trial's output is kept in the logs folder (default: a fresh one in /tmp).
# Needs root (network namespaces); without it exits 77.
set -uo pipefail
cd "$(dirname "$0")/../.."
trials=20
seed=$(date +%s)
hosts=4
build=build
timeout_ms=3000
slack_ms=2000
seconds=8
kinds=down,switchdown,starve,blackhole,loss
heartbeat_ms=0
shrink=random
logs=
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --trials) trials=$2 ;;
    --seed) seed=$2 ;;
    --hosts) hosts=$2 ;;
    --build) build=$2 ;;
    --timeout-ms) timeout_ms=$2 ;;
    --slack-ms) slack_ms=$2 ;;
    --seconds) seconds=$2 ;;
    --kinds) kinds=$2 ;;
    --heartbeat-ms) heartbeat_ms=$2 ;;
    --shrink) shrink=$2 ;;
    --logs) logs=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for number in "$trials" "$seed" "$hosts" "$timeout_ms" "$slack_ms" "$seconds" "$heartbeat_ms"; do
  [[ $number =~ ^[0-9]+$ ]] || { echo "link_chaos: '$number' is not a whole number" >&2; exit 2; }
done
[ "$hosts" -ge 2 ] && [ "$seconds" -ge 3 ] || { echo "link_chaos: needs --hosts >= 2 and --seconds >= 3" >&2; exit 2; }
case $shrink in random | always | never) ;; *) usage ;; esac
IFS=, read -r -a kind_list <<< "$kinds"
for kind in "${kind_list[@]}"; do
  case $kind in down | switchdown | starve | blackhole | loss) ;; *) echo "link_chaos: unknown kind '$kind'" >&2; exit 2 ;; esac
done
rank_binary=$build/perf/chaos/link_chaos_rank
[ -x "$rank_binary" ] || { echo "$rank_binary not built (ninja -C $build perf/chaos/link_chaos_rank)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "link_chaos: needs root (network namespaces); skipping" >&2; exit 77; }
[ -n "$logs" ] || logs=$(mktemp -d /tmp/link_chaos.XXXXXX)
mkdir -p "$logs"

RANDOM=$seed
declare -A counts=()
bad=0
slowest_fail_ms=0 slowest_fail_where=
failing_ms=()  # every failing collective's time, all ranks
slowest_shrink_ms=0
ms_to_s() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
count() { counts["$1"]=$(( ${counts["$1"]:-0} + 1 )); }
# The segments a dead process left: /dev/shm/chorus-shm-<tag>-<rank>-<pid>-...
orphan_segments() {
  local file pid
  for file in /dev/shm/chorus-shm-*; do
    [ -e "$file" ] || continue
    pid=$(basename "$file" | cut -d- -f5)
    [[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && basename "$file"
  done | sort
}

echo "link_chaos: $trials trials, seed $seed, $hosts hosts, timeout ${timeout_ms} ms (+${slack_ms} ms slack)," \
  "kinds $kinds, heartbeat ${heartbeat_ms} ms, shrink $shrink, logs in $logs"
started=$SECONDS
for ((trial = 1; trial <= trials; trial++)); do
  kind=${kind_list[RANDOM % ${#kind_list[@]}]}
  victim=$((RANDOM % hosts))
  at_ms=$((500 + RANDOM % ((seconds - 2) * 1000)))
  back_ms=
  # Half the faults heal: before the deadline (the calls may still succeed)
  # or after it (they must have failed by then).
  if [ $((RANDOM % 2)) -eq 0 ]; then back_ms=$((timeout_ms / 5 + RANDOM % (2 * timeout_ms))); fi
  case $shrink in always) shrinking=1 ;; never) shrinking=0 ;; *) shrinking=$((RANDOM % 2)) ;; esac
  label="$kind${back_ms:+ healed}"
  describe="trial $trial: $kind host $victim at $at_ms ms${back_ms:+, healed after $back_ms ms}$( ((shrinking)) && echo ', shrink')"
  fault_cmd="perf/chaos/link_fault.sh $kind $victim $(ms_to_s "$at_ms")${back_ms:+ $(ms_to_s "$back_ms")}"
  rank_args=(--seconds "$seconds" --slack-ms "$slack_ms")
  ((shrinking)) && rank_args+=(--shrink)
  log=$logs/trial-$trial.log
  segments_before=$(orphan_segments)
  # The wrapper reports how each rank ended; a rank the cluster's timeout
  # kills (a hang) prints nothing.
  CHORUS_TIMEOUT_MS=$timeout_ms CHORUS_HEARTBEAT_MS=$heartbeat_ms CLUSTER_FAULT_CMD=$fault_cmd \
    perf/cluster/cluster.sh -n "$hosts" -t $((seconds + 12 * timeout_ms / 1000 + 30)) -- \
    sh -c '"$0" "$@"; echo "linkchaos: rc rank=$RANK rc=$?"' "$rank_binary" "${rank_args[@]}" > "$log" 2>&1
  if grep -q "linkfault: skipped" "$log"; then
    count "$label | skipped: $(grep -o 'skipped: .*' "$log" | head -1 | cut -d' ' -f2-)"
    echo "$describe: skipped"
    continue
  fi
  grep -q "linkfault: struck" "$log" || count "$label | struck after the ranks were done"
  trial_bad=0
  summary=
  for ((rank = 0; rank < hosts; rank++)); do
    role=$([ "$rank" -eq "$victim" ] && echo "cut-off rank" || echo "other rank")
    rc=$(sed -n "s/^\[host$rank\] linkchaos: rc rank=$rank rc=\([0-9]*\)$/\1/p" "$log" | tail -1)
    case $rc in
      "") outcome="BAD: hang (killed by the cluster's timeout)" ;;
      0) outcome="completed, every result exact" ;;
      1) outcome="failed clearly in time" ;;
      2) outcome="failed, shrank, new communicator exact" ;;
      3) outcome="init failed clearly in time" ;;
      20) outcome="BAD: wrong result returned as success" ;;
      21) outcome="BAD: failed with an unexpected code" ;;
      22) outcome="BAD: error names no peer" ;;
      23) outcome="BAD: call returned after deadline + slack" ;;
      24) outcome="BAD: shrunk communicator wrong" ;;
      *) if [ "$rc" -ge 128 ]; then outcome="BAD: crashed (signal $((rc - 128)))"; else outcome="BAD: exit $rc"; fi ;;
    esac
    count "$label | $role | $outcome"
    count "all faults | $role | $outcome"
    [[ $outcome == BAD* ]] && trial_bad=1
    summary+=" $rank:${rc:-hang}"
    # Whom a survivor's first collective failure blames.
    if [ "$rank" -ne "$victim" ]; then
      peers=$(sed -n "s/^\[host$rank\] linkchaos: fail .*phase=collective .* peers=\([-0-9,]*\) .*/\1/p" "$log" | head -1)
      if [ -n "$peers" ]; then
        if [[ ,$peers, == *,$victim,* ]]; then named="other rank's error names the cut-off rank"
        else named="other rank's error names only other ranks, not the cut-off one"; fi
        count "$label | $named"
        count "all faults | $named"
      fi
    fi
  done
  # The slowest failing collective and shrink, over every rank.
  while read -r ms where; do
    [ -n "$ms" ] || continue
    failing_ms+=("$ms")
    [ "$ms" -gt "$slowest_fail_ms" ] && { slowest_fail_ms=$ms; slowest_fail_where="$describe, $where"; }
  done < <(sed -n 's/^\[host\([0-9]*\)\] linkchaos: fail .*phase=\(collective\|shrunk\) .*op=\([a-z]*\) bytes=\([0-9]*\) code=\([a-zA-Z]*\) ms=\([0-9]*\) .*/\6 rank \1 \3 \4 B \5/p' "$log")
  while read -r ms; do
    [ -n "$ms" ] && [ "$ms" -gt "$slowest_shrink_ms" ] && slowest_shrink_ms=$ms
  done < <(sed -n 's/^\[host[0-9]*\] linkchaos: \(shrink\|fail .*phase=shrink\) .*ms=\([0-9]*\).*/\2/p' "$log")
  # Members of a shrunk communicator stay while the others may still shrink:
  # two member lists in one trial are two communicators at once.
  groups=$(sed -n 's/^\[host[0-9]*\] linkchaos: shrunk .* members=\([0-9,]*\)$/\1/p' "$log" | sort -u)
  if [ "$(printf '%s' "$groups" | grep -c .)" -gt 1 ]; then
    count "$label | BAD: two communicators formed ($(echo $groups | tr ' ' '+'))"
    trial_bad=1
  fi
  leaked=$(comm -13 <(echo "$segments_before") <(orphan_segments))
  if [ -n "$leaked" ]; then count "$label | BAD: leaked shared-memory segment"; trial_bad=1; fi
  echo "$describe: exits$summary$( ((trial_bad)) && echo "  <-- BAD, see $log")"
  ((trial_bad)) && bad=1
done

echo "link_chaos: $trials trials (seed $seed) in $((SECONDS - started)) s; ranks by fault | role | outcome:"
while read -r key; do printf '  %4d  %s\n' "${counts[$key]}" "$key"; done < <(printf '%s\n' "${!counts[@]}" | sort)
if [ ${#failing_ms[@]} -gt 0 ]; then
  median_ms=$(printf '%s\n' "${failing_ms[@]}" | sort -n | sed -n "$(((${#failing_ms[@]} + 1) / 2))p")
  echo "  failing calls: ${#failing_ms[@]}, median $median_ms ms"
fi
echo "  slowest failing call: $slowest_fail_ms ms (deadline $timeout_ms ms, limit $((timeout_ms + slack_ms)) ms)${slowest_fail_where:+: $slowest_fail_where}"
[ "$slowest_shrink_ms" -gt 0 ] && echo "  slowest shrink: $slowest_shrink_ms ms (limit $((2 * timeout_ms + slack_ms)) ms)"
exit $bad
