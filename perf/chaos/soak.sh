#!/usr/bin/env bash
# Long soak: randomized collectives (every collective, datatype, op, root,
# count up to 10^6, in place or not, every forced algorithm, two
# communicators at a time), each checked exactly, through
# tests/chaos/soak_test. Exits non-zero on any wrong result or error.
#
#   perf/chaos/soak.sh [--calls N] [--seed S] [--build DIR]
#
# Defaults: 10^4 calls (about a minute on 2 cores), seed from the clock.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=10000
seed=$(date +%s)
build=build
while [ $# -gt 0 ]; do
  case $1 in
    --calls) calls=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--calls N] [--seed S] [--build DIR]" >&2; exit 2 ;;
  esac
done
binary=$build/tests/chaos/soak_test
[ -x "$binary" ] || { echo "$binary not built (source scripts/setup.sh; chorus_configure_and_build)" >&2; exit 2; }
CHORUS_SOAK_CALLS=$calls CHORUS_SOAK_SEED=$seed "$binary" 2>&1 |
  grep -E '^(soak:|\[  (PASSED|FAILED)  \]|.*Failure|rank [0-9]+: )'
