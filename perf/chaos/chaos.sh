#!/usr/bin/env bash
# Long chaos run: many randomized fault trials (SIGKILL or SIGSTOP of a
# random rank in init, a collective, a group or a shrink; some with
# /dev/shm full), through tests/chaos/chaos_test. Prints the counts of each
# fault and outcome; exits non-zero on any wrong result, hang, crash, leak
# or split membership.
#
#   perf/chaos/chaos.sh [--trials N] [--seed S] [--build DIR]
#
# Defaults: 500 trials (about 20 minutes on 2 cores), seed from the clock
# (printed, so a failing run can be replayed with --seed).
set -euo pipefail
cd "$(dirname "$0")/../.."
trials=500
seed=$(date +%s)
build=build
while [ $# -gt 0 ]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--trials N] [--seed S] [--build DIR]" >&2; exit 2 ;;
  esac
done
binary=$build/tests/chaos/chaos_test
[ -x "$binary" ] || { echo "$binary not built (source scripts/setup.sh; chorus_configure_and_build)" >&2; exit 2; }
echo "chaos: $trials trials, seed $seed"
CHORUS_CHAOS_TRIALS=$trials CHORUS_CHAOS_SEED=$seed "$binary" 2>/dev/null |
  grep -E '^(chaos:|  +[0-9]+  |  slowest|\[  (PASSED|FAILED)  \]|.*Failure|.*exited [0-9]+)'
