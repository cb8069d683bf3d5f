#!/usr/bin/env bash
# Test-suite hook: runs the given test binaries on a soft-RoCE device, one
# after the other in a single boot of the scripts/rdma-vm.sh guest, and ends
# with "N passed, M failed" (their gtest cases) as ./test.sh's stages do.
#
#   scripts/rdma-vm-tests.sh TEST_BINARY...
#
# Where the guest cannot be had (CHORUS_RDMA_VM=0, not x86_64, a binary not
# built, packages or the kernel not installable, the guest not booting) it
# prints one line "rdma-vm: skipped (<why>)" and exits 0. Otherwise it exits 0
# when every binary passed and 1 when one failed or the run timed out (then
# without the summary line).
# CHORUS_RDMA_VM_TIMEOUT (seconds, default 900) bounds the whole run, boot
# included.
set -uo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout_s=${CHORUS_RDMA_VM_TIMEOUT:-900}

skip() {
  echo "rdma-vm: skipped ($*)"
  exit 0
}

[ $# -gt 0 ] || { echo "usage: $0 TEST_BINARY..." >&2; exit 2; }
case ${CHORUS_RDMA_VM:-1} in 0|no|off) skip "CHORUS_RDMA_VM=${CHORUS_RDMA_VM}" ;; esac
[ "$(uname -m)" = x86_64 ] || skip "needs an x86_64 host, this is $(uname -m)"
tests=()
for binary in "$@"; do
  [ -x "$binary" ] || skip "$binary is not built"
  tests+=("$(cd "$(dirname "$binary")" && pwd -P)/$(basename "$binary")")
done

prepare_log=$(mktemp)
trap 'rm -f "$prepare_log"' EXIT
if ! "$script_dir/rdma-vm.sh" --prepare >"$prepare_log" 2>&1; then
  skip "$(grep '^rdma-vm: ' "$prepare_log" | tail -1 | sed 's/^rdma-vm: //')"
fi

# In the guest: every binary runs even after a failure, and its gtest cases
# are counted as ./test.sh counts them (a binary that fails without a gtest
# summary counts as one failure, one that succeeds without it as no case). The last line is "N passed, M failed"; any
# failure exits 1, so rdma-vm.sh's 125 (no guest) cannot be a test's status.
# shellcheck disable=SC2016  # expands in the guest
runner='passed=0
failed=0
for test in "$@"; do
  echo "=== $test"
  "$test" 2>&1 | tee /tmp/test.log
  status=${PIPESTATUS[0]}
  p=$(sed -n "s/^\[  PASSED  \] \([0-9][0-9]*\) tests\{0,1\}\..*/\1/p" /tmp/test.log | tail -n 1)
  f=$(sed -n "s/^\[  FAILED  \] \([0-9][0-9]*\) tests\{0,1\}, listed below.*/\1/p" /tmp/test.log | tail -n 1)
  p=${p:-0}
  f=${f:-0}
  [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  [ "$status" -ne 0 ] && echo "=== $test: exit status $status"
  echo "=== $test: $p passed, $f failed"
  passed=$((passed + p))
  failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]'
guest_errors=$(mktemp)
trap 'rm -f "$prepare_log" "$guest_errors"' EXIT
# rdma-vm.sh's own messages (the tests' output is on stdout): why there was
# no guest becomes the skip line; anything else (a timeout) is shown.
"$script_dir/rdma-vm.sh" --timeout "$timeout_s" -- bash -c "$runner" rdma-vm-tests "${tests[@]}" \
  2>"$guest_errors"
status=$?
[ "$status" -eq 125 ] && skip "$(grep '^rdma-vm: ' "$guest_errors" | tail -1 | sed 's/^rdma-vm: //')"
cat "$guest_errors" >&2
[ "$status" -eq 0 ] || exit 1
