#!/usr/bin/env bash
# One network fault on one host of perf/cluster/cluster.sh, run by it as
# CLUSTER_FAULT_CMD (which exports CLUSTER_HOST_NS, CLUSTER_SWITCH_NS,
# CLUSTER_RATE and CLUSTER_BURST_BYTES). perf/chaos/link_chaos.sh draws the
# arguments.
#
#   perf/chaos/link_fault.sh KIND HOST AT_S [BACK_S]
#
# Waits AT_S seconds, then breaks HOST's link; with BACK_S, repairs it that
# many seconds later. KIND:
#   down        ip link set eth0 down inside the host (no carrier either side)
#   switchdown  the switch's port to the host down
#   starve      both directions of the link throttled to 8 kbit/s (tc tbf)
#   blackhole   the switch's port taken off its bridge: link and carrier stay up,
#               every frame to or from the host is dropped (100% loss)
#   loss        100% loss with tc netem on both ends (exits 3 when netem is
#               not available: no sch_netem in the kernel)
# Prints "linkfault: struck ..." and "linkfault: repaired ..." with the time
# since it started.
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
kind=$1 host=$2 at_s=$3 back_s=${4:-}
read -r -a host_ns <<< "$CLUSTER_HOST_NS"
ns=${host_ns[$host]}
switch=$CLUSTER_SWITCH_NS
port=p$host
started_ns=$(date +%s%N)
since() { local ms=$((($(date +%s%N) - started_ns) / 1000000)); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }

tbf() {  # tbf() NAMESPACE DEVICE RATE BURST
  tc -n "$1" qdisc change dev "$2" root tbf rate "$3" burst "$4" latency 50ms
}

strike() {
  case $kind in
    down) ip -n "$ns" link set eth0 down ;;
    switchdown) ip -n "$switch" link set "$port" down ;;
    starve) tbf "$ns" eth0 8kbit 1600 && tbf "$switch" "$port" 8kbit 1600 ;;
    blackhole) ip -n "$switch" link set "$port" nomaster ;;
    loss)
      tc -n "$ns" qdisc replace dev eth0 root netem loss 100% &&
        tc -n "$switch" qdisc replace dev "$port" root netem loss 100% ;;
    *) echo "linkfault: unknown kind '$kind'" >&2; exit 2 ;;
  esac
}

repair() {
  case $kind in
    down) ip -n "$ns" link set eth0 up ;;
    switchdown) ip -n "$switch" link set "$port" up ;;
    starve)
      tbf "$ns" eth0 "$CLUSTER_RATE" "$CLUSTER_BURST_BYTES" && tbf "$switch" "$port" "$CLUSTER_RATE" "$CLUSTER_BURST_BYTES" ;;
    blackhole) ip -n "$switch" link set "$port" master br0 ;;
    loss)
      for end in "$ns eth0" "$switch $port"; do
        set -- $end
        tc -n "$1" qdisc replace dev "$2" root tbf rate "$CLUSTER_RATE" burst "$CLUSTER_BURST_BYTES" latency 50ms
      done ;;
  esac
}

sleep "$at_s"
if ! strike; then
  [ "$kind" = loss ] && { echo "linkfault: skipped: tc netem is not available here"; exit 3; }
  echo "linkfault: could not strike $kind on host $host"; exit 1
fi
echo "linkfault: struck $kind host=$host at_s=$(since)"
[ -n "$back_s" ] || exit 0
sleep "$back_s"
repair || { echo "linkfault: could not repair $kind on host $host"; exit 1; }
echo "linkfault: repaired $kind host=$host at_s=$(since)"
