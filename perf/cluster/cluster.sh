#!/usr/bin/env bash
# Emulated cluster: N hosts as network namespaces, each with one veth link to
# a switch (a bridge inside its own namespace), every link rate-limited in
# both directions with tc tbf. Runs -p ranks of COMMAND per host (default 1;
# ranks of one host talk through shared memory, the hosts over TCP) and
# always tears everything down, even on failure or Ctrl-C.
#
#   perf/cluster/cluster.sh [-n hosts] [-p ranks_per_host] [-r rate] [-t timeout_s] -- COMMAND [ARGS...]
#
# Rank h*p+l runs inside host h with RANK, WORLD_SIZE, LOCAL_RANK=l,
# CHORUS_ROOT=<host 0>:<port>, CHORUS_SECRET (fresh per run) and
# CHORUS_SOCKET_IFNAME==eth0 set, so chorusCommInitFromEnv connects it.
# In COMMAND, {rank} is replaced by the rank. Output lines are prefixed with
# the host name (and the local rank, with -p); the exit status is the first non-zero rank status.
# CLUSTER_SYSCTLS="key=value ..." sets network sysctls inside every host.
# The rest of the caller's environment reaches every rank unchanged (ip netns
# exec keeps it), e.g. CHORUS_SOCKET_RCVBUF=1M perf/cluster/cluster.sh -- ...
# CLUSTER_BURST_BYTES sets the tbf bucket (default: 1 ms of the rate, at least 64 KiB).
# CLUSTER_TC_STATS=FILE writes every link's tbf counters (tc -s) there after the run.
# CLUSTER_FAULT_CMD="shell command" runs in the root namespace once the ranks
# have started, with CLUSTER_HOST_NS (the hosts' namespaces, host 0 first),
# CLUSTER_SWITCH_NS, CLUSTER_HOSTS, CLUSTER_RATE and CLUSTER_BURST_BYTES
# exported, to break links (ip, tc); output prefixed [fault]. It is killed
# once the ranks are done and never changes the exit status (perf/chaos/link_chaos.sh).
# Needs root (ip netns, tc); without it, says so and exits 77 ("skipped").
# Only the addresses 10.213.0.0/24 inside the namespaces it created are used.
set -uo pipefail

hosts=4
per_host=1
rate=1gbit
timeout_s=300
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts "n:p:r:t:h" opt; do
  case $opt in
    n) hosts=$OPTARG ;;
    p) per_host=$OPTARG ;;
    r) rate=$OPTARG ;;
    t) timeout_s=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || usage
if ! [[ $hosts =~ ^[0-9]+$ ]] || [ "$hosts" -lt 1 ] || [ "$hosts" -gt 64 ]; then
  echo "cluster: -n must be 1..64" >&2; exit 2
fi
if ! [[ $per_host =~ ^[0-9]+$ ]] || [ "$per_host" -lt 1 ] || [ "$per_host" -gt 64 ]; then
  echo "cluster: -p must be 1..64" >&2; exit 2
fi
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "cluster: needs root with ip and tc (iproute2); skipping" >&2
  exit 77
fi

id=$$
prefix="chorus${id}"
switch="${prefix}sw"
port=$((20000 + id % 20000))
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
pids=()
fault_pid=

# The fault injector and what it started (a sleep before a link comes back).
end_fault() {
  [ -n "$fault_pid" ] || return 0
  kill -KILL -- "-$fault_pid" 2>/dev/null
  wait "$fault_pid" 2>/dev/null
  fault_pid=
}

teardown() {
  set +e  # a set-up failure under set -e must not stop the clean-up half way (leaking namespaces)
  end_fault
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  for ((h = 0; h < hosts; h++)); do ip netns del "${prefix}h$h" 2>/dev/null; done
  ip netns del "$switch" 2>/dev/null
  return 0
}
trap teardown EXIT
trap 'exit 130' INT TERM

# The token bucket must hold enough to keep the rate (1 ms of it holds
# 1 Gbit/s here) but no more: a bigger bucket lets an idle link burst past
# its rate, which flatters algorithms that leave links idle (tree, ps).
rate_bits() {
  local value=${1%%[a-zA-Z]*} unit=${1##*[0-9.]}
  case ${unit,,} in
    gbit) echo $((value * 1000000000)) ;;
    mbit) echo $((value * 1000000)) ;;
    kbit) echo $((value * 1000)) ;;
    bit | "") echo "$value" ;;
    *) echo "cluster: unsupported rate unit in '$1' (use gbit, mbit, kbit)" >&2; exit 2 ;;
  esac
}
burst_bytes=$(( $(rate_bits "$rate") / 8 / 1000 ))
[ "$burst_bytes" -lt 65536 ] && burst_bytes=65536
# CLUSTER_BURST_BYTES overrides the bucket (experiments: how much idle time a link may bank).
if [ -n "${CLUSTER_BURST_BYTES:-}" ]; then
  [[ $CLUSTER_BURST_BYTES =~ ^[0-9]+$ ]] || { echo "cluster: CLUSTER_BURST_BYTES must be a byte count" >&2; exit 2; }
  burst_bytes=$CLUSTER_BURST_BYTES
fi
limit() { tc -n "$1" qdisc add dev "$2" root tbf rate "$rate" burst "$burst_bytes" latency 50ms; }

echo "cluster: namespaces ${prefix}h0..${prefix}h$((hosts - 1)) and $switch, links $rate" >&2
set -e
ip netns add "$switch"
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
ip -n "$switch" link set lo up
for ((h = 0; h < hosts; h++)); do
  ns="${prefix}h$h"
  ip netns add "$ns"
  ip link add "p$h" netns "$switch" type veth peer name eth0 netns "$ns"
  ip -n "$switch" link set "p$h" master br0 up
  ip -n "$ns" addr add "10.213.0.$((h + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  limit "$ns" eth0          # host -> switch
  limit "$switch" "p$h"     # switch -> host
  # Per-namespace network sysctls, e.g. CLUSTER_SYSCTLS="net.ipv4.tcp_slow_start_after_idle=0".
  for setting in ${CLUSTER_SYSCTLS:-}; do ip netns exec "$ns" sysctl -qw "$setting"; done
done
set +e

for ((h = 0; h < hosts; h++)); do
  for ((l = 0; l < per_host; l++)); do
    rank=$((h * per_host + l))
    label="host$h"
    [ "$per_host" -gt 1 ] && label="host$h/$l"
    cmd=("${@//\{rank\}/$rank}")
    ip netns exec "${prefix}h$h" env RANK=$rank WORLD_SIZE=$((hosts * per_host)) LOCAL_RANK=$l \
      CHORUS_ROOT="10.213.0.1:$port" CHORUS_SECRET="$secret" CHORUS_SOCKET_IFNAME="=eth0" \
      timeout --kill-after=5 "$timeout_s" "${cmd[@]}" 2>&1 | sed -u "s|^|[$label] |" &
    pids+=($!)
  done
done

if [ -n "${CLUSTER_FAULT_CMD:-}" ]; then
  host_ns=()
  for ((h = 0; h < hosts; h++)); do host_ns+=("${prefix}h$h"); done
  CLUSTER_HOST_NS="${host_ns[*]}" CLUSTER_SWITCH_NS=$switch CLUSTER_HOSTS=$hosts CLUSTER_RATE=$rate \
    CLUSTER_BURST_BYTES=$burst_bytes setsid sh -c "$CLUSTER_FAULT_CMD" \
    > >(sed -u "s/^/[fault] /") 2>&1 < /dev/null &
  fault_pid=$!  # setsid keeps the pid: the injector leads its own process group
fi

status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  rc=$?
  [ $status -eq 0 ] && status=$rc
done
pids=()
end_fault
if [ -n "${CLUSTER_TC_STATS:-}" ]; then
  {
    for ((h = 0; h < hosts; h++)); do
      echo "== host$h eth0 (host -> switch)"; tc -s -n "${prefix}h$h" qdisc show dev eth0
      echo "== switch p$h (switch -> host$h)"; tc -s -n "$switch" qdisc show dev "p$h"
    done
  } > "$CLUSTER_TC_STATS" 2>&1
fi
exit $status
