#!/usr/bin/env bash
# Runs Chorus under a real Slurm: starts a private single-node cluster from
# Debian's slurm-wlm and munge (munged, slurmctld and slurmd started by hand,
# no systemd; configuration, key, state and logs in a fresh directory under
# /tmp), then runs under srun:
#   cli      the nccl-tests CLIs (all_reduce_perf, all_gather_perf,
#            sendrecv_perf) with `srun -n 2`: chorusCommInitFromEnv reads the
#            rank and size from SLURM_PROCID / SLURM_NTASKS, the rendezvous
#            from CHORUS_ROOT
#   mpi      an unmodified MPI program (tests/mpi/mpi_allreduce_loop) with
#            libchorus_mpi.so preloaded under `srun --mpi=pmix -n 2`
#   trainer  the reference trainer (chorus_trainer) with `srun -n 2`
# Every daemon it started is stopped on exit, whatever happens (trap), and
# the directory is removed (CHORUS_SLURM_KEEP=1 keeps it, with the logs).
#
# Usage: scripts/slurm-local.sh [BUILD_DIR]     (default: build)
# Output: each command ("slurm-local: $ srun ...") and what it printed, one
# verdict per step ("slurm-local: cli: PASS", "... FAIL: <why>", "... SKIP:
# <why>", e.g. when slurm-wlm or munge is not installed) and, last,
# "slurm-local: N passed, M failed, K skipped". Exit status 0 when nothing
# failed. Every step has a timeout; the whole script takes well under 5
# minutes (CHORUS_SLURM_STEP_TIMEOUT_S, default 60, bounds each srun;
# CHORUS_SLURM_TIMEOUT_S, default 150, all of them together).
set -uo pipefail

BUILD_DIR=$(cd "${1:-build}" 2>/dev/null && pwd) || {
  echo "slurm-local: no build directory ${1:-build}" >&2
  exit 2
}
# Every srun gets STEP_TIMEOUT_S, and all end by TOTAL_TIMEOUT_S from the
# start; stopping the daemons afterwards takes at most 25 s.
STEP_TIMEOUT_S=${CHORUS_SLURM_STEP_TIMEOUT_S:-60}
TOTAL_TIMEOUT_S=${CHORUS_SLURM_TIMEOUT_S:-150}
DAEMON_WAIT_S=30
deadline=$((SECONDS + TOTAL_TIMEOUT_S))

passed=0
failed=0
skipped=0
run_dir=""

say() { echo "slurm-local: $*"; }
pass() { say "$1: PASS"; passed=$((passed + 1)); }
fail() { say "$1: FAIL: $2"; failed=$((failed + 1)); }
skip() { say "$1: SKIP: $2"; skipped=$((skipped + 1)); }

summary() { say "$passed passed, $failed failed, $skipped skipped"; }

# The pid in a daemon's pid file, if that process is alive.
daemon_pid() {
  local pid
  pid=$(cat "$run_dir/run/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# SIGTERM, up to 5 s of grace, then SIGKILL: only the pids this script's
# daemons wrote.
stop_daemon() {
  local pid
  pid=$(daemon_pid "$1") || return 0
  kill "$pid" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  say "$1 (pid $pid) ignored SIGTERM for 5 s: SIGKILL"
  kill -9 "$pid" 2>/dev/null
}

cleanup() {
  [ -n "$run_dir" ] || return 0
  if daemon_pid slurmctld >/dev/null; then
    # Job steps run under slurmstepd, which outlives slurmd: end them first.
    timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null
    local until=$((SECONDS + 5))
    while [ "$SECONDS" -lt "$until" ] && [ -n "$(timeout 2 squeue -h -o %i 2>/dev/null)" ]; do
      sleep 0.2
    done
  fi
  stop_daemon slurmd
  stop_daemon slurmctld
  stop_daemon munged
  if [ "${CHORUS_SLURM_KEEP:-0}" = 1 ]; then
    say "kept $run_dir"
  else
    rm -rf "$run_dir"
  fi
  run_dir=""
}

finish() {
  trap '' INT TERM  # a second signal must not cut the clean-up short
  cleanup
  summary
  [ "$failed" -eq 0 ]
  exit $?
}

# A signal ends the running step first (timeout passes it on to srun,
# which cancels its job step), then the EXIT trap stops the daemons.
step_pid=""
interrupted() {
  say "interrupted"
  [ -z "$step_pid" ] || kill "$step_pid" 2>/dev/null
  failed=$((failed + 1))
  exit 1
}
trap finish EXIT
trap interrupted INT TERM

# A TCP port no socket uses (best effort: picked, not reserved). Picked below
# the kernel's ephemeral range: ports in it are handed out at any moment to
# outgoing connections and port-0 listeners (the daemons then failed to bind).
free_port() {
  local port low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 12000 ] || low=32768
  for _ in $(seq 100); do
    port=$((10000 + RANDOM % (low - 10000)))
    if command -v ss >/dev/null; then
      [ -z "$(ss -Htan "sport = :$port")" ] && echo "$port" && return 0
    elif ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port" && return 0
    fi
  done
  return 1
}

# Runs a command under the step timeout (less if the script's time is
# nearly up), printing it and its output; its output is left in $step_out.
step_out=""
run_step() {
  local limit=$((deadline - SECONDS))
  [ "$limit" -le "$STEP_TIMEOUT_S" ] || limit=$STEP_TIMEOUT_S
  if [ "$limit" -lt 5 ]; then
    step_out="not started: the script's ${TOTAL_TIMEOUT_S} s are up"
    return 1
  fi
  say "\$ $*"
  # In the background, so that the signal traps run at once (bash runs them
  # only between foreground commands).
  timeout -k 5 "$limit" "$@" >"$run_dir/step.out" 2>&1 &
  step_pid=$!
  wait "$step_pid"
  local rc=$?
  step_pid=""
  step_out=$(cat "$run_dir/step.out")
  echo "$step_out"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    step_out+=$'\n'"timed out after ${limit} s"
  fi
  return "$rc"
}

# ---- what is needed --------------------------------------------------------

missing=()
for tool in munged slurmctld slurmd srun sinfo squeue scancel; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  skip all "not installed: ${missing[*]} (Debian: slurm-wlm munge; scripts/setup.sh installs them)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  skip all "slurmd must run as root to launch job steps"
  exit 0
fi

# srun would otherwise join the job of a real Slurm this script runs in.
for variable in $(compgen -v SLURM_); do unset "$variable"; done

# ---- a private cluster -----------------------------------------------------

run_dir=$(mktemp -d /tmp/chorus-slurm.XXXXXX) || {
  fail all "mktemp failed"
  exit 1
}
# munged wants its socket's directories traversable by all and its key private.
chmod 755 "$run_dir"
mkdir -p "$run_dir/run" "$run_dir/munge" "$run_dir/state" "$run_dir/spool" "$run_dir/log"
chmod 755 "$run_dir/run"
chmod 700 "$run_dir/munge"
head -c 1024 /dev/urandom >"$run_dir/munge/munge.key"
chmod 400 "$run_dir/munge/munge.key"

node=$(hostname -s)
cpus=$(nproc)
ctld_port=$(free_port) && slurmd_port=$(free_port) || {
  fail all "no free TCP port for slurmctld/slurmd"
  exit 1
}
export SLURM_CONF="$run_dir/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=chorus
SlurmctldHost=$node
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$run_dir/run/munge.socket
StateSaveLocation=$run_dir/state
SlurmdSpoolDir=$run_dir/spool
SlurmctldPidFile=$run_dir/run/slurmctld.pid
SlurmdPidFile=$run_dir/run/slurmd.pid
SlurmctldLogFile=$run_dir/log/slurmctld.log
SlurmdLogFile=$run_dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
InactiveLimit=0
KillWait=5
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=chorus Nodes=ALL Default=YES MaxTime=10 State=UP
EOF
say "cluster in $run_dir: node $node, $cpus CPUs, slurmctld port $ctld_port, slurmd port $slurmd_port"

if ! munged --key-file="$run_dir/munge/munge.key" --socket="$run_dir/run/munge.socket" \
    --pid-file="$run_dir/run/munged.pid" --log-file="$run_dir/log/munged.log" \
    --seed-file="$run_dir/munge/munged.seed"; then
  fail all "munged did not start: $(tail -n 3 "$run_dir/log/munged.log" 2>/dev/null)"
  exit 1
fi
if ! slurmctld -f "$SLURM_CONF" || ! slurmd -f "$SLURM_CONF"; then
  fail all "slurmctld or slurmd did not start: $(tail -n 3 "$run_dir"/log/slurm*.log 2>/dev/null)"
  exit 1
fi
state=""
ready_by=$((SECONDS + DAEMON_WAIT_S))
while [ "$SECONDS" -lt "$ready_by" ]; do
  state=$(timeout 2 sinfo -h -n "$node" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then
  fail all "node $node not idle after ${DAEMON_WAIT_S} s (state '${state}'): $(tail -n 3 "$run_dir"/log/slurm*.log)"
  exit 1
fi
say "daemons: munged pid $(daemon_pid munged), slurmctld pid $(daemon_pid slurmctld), slurmd pid $(daemon_pid slurmd)"
say "$(sinfo | tr '\n' ';' | sed 's/;$//;s/;/ | /g')"

# ---- cli: the nccl-tests CLIs, rendezvous from the environment -------------

# Every rank gets the same secret and rank 0's address; srun exports the
# caller's environment to every task by default.
export CHORUS_SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
cli_ok=1
cli_why=""
for cli in all_reduce all_gather sendrecv; do
  binary="$BUILD_DIR/perf/${cli}_perf"
  if [ ! -x "$binary" ]; then
    cli_ok=0 cli_why="$binary not built"
    break
  fi
  port=$(free_port)
  if ! CHORUS_ROOT="127.0.0.1:$port" run_step srun -O -n 2 -t 2 "$binary" -b 8 -e 1M -f 32; then
    cli_ok=0 cli_why="${cli}_perf failed: $(tail -n 1 <<<"$step_out")"
    break
  fi
  if ! grep -q '^# Out of bounds values : 0 OK' <<<"$step_out" || ! grep -q '2 ranks in 2 processes' <<<"$step_out"; then
    cli_ok=0 cli_why="${cli}_perf: no '2 ranks in 2 processes' header or wrong values"
    break
  fi
done
if [ ! -x "$BUILD_DIR/perf/all_reduce_perf" ]; then
  skip cli "$BUILD_DIR/perf/all_reduce_perf not built"
elif [ "$cli_ok" = 1 ]; then
  pass cli
else
  fail cli "$cli_why"
fi

# ---- mpi: an MPI program with libchorus_mpi.so under srun's PMIx ----------

interposer="$BUILD_DIR/interpose/mpi/libchorus_mpi.so"
mpi_program="$BUILD_DIR/tests/mpi/mpi_allreduce_loop"
mpi_plugins=$(timeout 10 srun --mpi=list 2>&1)
mpi_plugin=""
for candidate in pmix pmi2; do
  if grep -qw "$candidate" <<<"$mpi_plugins"; then
    mpi_plugin=$candidate
    break
  fi
done
if [ ! -f "$interposer" ] || [ ! -x "$mpi_program" ]; then
  skip mpi "$interposer or $mpi_program not built (needs Open MPI: libopenmpi-dev)"
elif [ -z "$mpi_plugin" ]; then
  skip mpi "srun has neither the pmix nor the pmi2 MPI plugin: $mpi_plugins"
else
  [ "$mpi_plugin" = pmix ] || say "srun has no pmix plugin; using $mpi_plugin"
  if ! run_step srun --mpi="$mpi_plugin" -O -n 2 -t 2 \
      --export=ALL,LD_PRELOAD="$interposer",CHORUS_DEBUG=INFO,CHORUS_DEBUG_SUBSYS=MPI \
      "$mpi_program" --iterations 200; then
    fail mpi "mpi_allreduce_loop failed under srun --mpi=$mpi_plugin: $(tail -n 1 <<<"$step_out")"
  elif ! grep -q 'on 2 ranks, 0 wrong' <<<"$step_out"; then
    fail mpi "mpi_allreduce_loop did not report 0 wrong on 2 ranks"
  elif [ "$(grep -c ': Chorus served [1-9]' <<<"$step_out")" -ne 2 ]; then
    fail mpi "no 'Chorus served' summary from both ranks: libchorus_mpi.so did not serve the calls"
  else
    pass mpi
  fi
fi

# ---- trainer: the reference trainer, rendezvous from the environment -------

trainer="$BUILD_DIR/examples/trainer/chorus_trainer"
if [ ! -x "$trainer" ]; then
  skip trainer "$trainer not built (needs libopenblas-dev and zlib1g-dev)"
elif [ ! -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  skip trainer "no Fashion-MNIST (Debian: dataset-fashion-mnist)"
else
  port=$(free_port)
  if ! CHORUS_ROOT="127.0.0.1:$port" run_step srun -O -n 2 -t 2 "$trainer" --model lenet --epochs 1 \
      --batch 64 --train-limit 1024 --test-limit 512 --blas-threads 1; then
    fail trainer "chorus_trainer failed: $(tail -n 1 <<<"$step_out")"
  elif ! grep -q ', 2 rank(s), ' <<<"$step_out" || ! grep -Eq '^ +1 +[0-9.]+ +[0-9.]+ ' <<<"$step_out"; then
    fail trainer "chorus_trainer printed no 2-rank header or no epoch row"
  else
    pass trainer
  fi
fi
