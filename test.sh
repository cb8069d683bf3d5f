#!/usr/bin/env bash
# Installs what is missing, builds, runs every *_test executable under the
# build's tests/ (each under a timeout) and totals their gtest cases, runs the
# API tests again over the UCX transport where it is built, then runs the
# core, transport, API and MPI drop-in tests under ASan + UBSan and the
# threaded ones under TSan (each binary one test; CHORUS_TEST_SANITIZERS=0
# skips both stages), then the verbs transport's tests and the API tests over
# it in a soft-RoCE qemu guest where one can be had. The last line is always
# "N passed, M failed"; the exit status is non-zero when anything failed or
# nothing ran. A binary that crashes or times out counts as at least one
# failure.
set -uo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

TEST_TIMEOUT_S=${CHORUS_TEST_TIMEOUT_S:-600}
passed=0
failed=0

finish() {
  echo "$passed passed, $failed failed"
  if [ "$failed" -gt 0 ] || [ $((passed + failed)) -eq 0 ]; then
    exit 1
  fi
  exit 0
}

if ! chorus_install_packages || ! chorus_configure_and_build; then
  echo "set-up or build failed"
  failed=1
  finish
fi

export GTEST_COLOR=no
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Runs each binary under the timeout, with the VAR=value assignments before
# "--" in its environment, and adds its gtest cases to the totals.
run_binaries() {
  local assignments=() test start rc p f
  while [ "$1" != -- ]; do
    assignments+=("$1")
    shift
  done
  shift
  for test in "$@"; do
    echo "=== $test${assignments[*]:+ (${assignments[*]})}"
    start=$SECONDS
    env "${assignments[@]}" timeout --kill-after=10 "$TEST_TIMEOUT_S" "$test" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    # gtest's summary: "[  PASSED  ] 12 tests." and "[  FAILED  ] 2 tests, listed below:"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) tests\{0,1\}, listed below.*/\1/p' "$log" | tail -n 1)
    if [ -z "$p" ] && [ -z "$f" ]; then
      # No summary (crash, hang): count the cases that finished before it.
      p=$(grep -c '^\[       OK \]' "$log")
      f=$(grep -c '^\[  FAILED  \] .* ([0-9]* ms)$' "$log")
    fi
    p=${p:-0}
    f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
      f=1
    fi
    case $rc in
      0) ;;
      124 | 137) echo "=== $test: TIMED OUT after ${TEST_TIMEOUT_S} s" ;;
      *) echo "=== $test: exit status $rc" ;;
    esac
    echo "=== $test: $p passed, $f failed ($((SECONDS - start)) s)"
    passed=$((passed + p))
    failed=$((failed + f))
  done
}

mapfile -t tests < <(find "$CHORUS_BUILD_DIR/tests" -name '*_test' -type f -executable | sort)
run_binaries -- "${tests[@]}"
if [ "${#tests[@]}" -eq 0 ]; then
  echo "no *_test executables under $CHORUS_BUILD_DIR/tests"
fi

# The API's conformance and failure tests again over the UCX transport
# alone, ranks as threads and as processes (about 2.5 minutes), where the
# build has it. The ibverbs selection test is about that transport only.
if grep -q '^#define CHORUS_HAVE_UCX 1' "$CHORUS_BUILD_DIR/chorus_build_config.h" 2>/dev/null; then
  echo "=== ucx: the API tests over CHORUS_TRANSPORT=ucx"
  start_ucx=$SECONDS
  passed_before=$passed failed_before=$failed
  mapfile -t ucx_tests < <(printf '%s\n' "${tests[@]}" | grep '/tests/api/' | grep -v '/ibverbs_selection_test$')
  run_binaries CHORUS_TRANSPORT=ucx -- "${ucx_tests[@]}"
  echo "=== ucx: $((passed - passed_before)) passed, $((failed - failed_before)) failed ($((SECONDS - start_ucx)) s)"
fi

# A stage whose last "N passed, M failed" line is its tally (each binary one
# test): runs the command, adds the tally to the totals, and counts a
# non-zero exit with no failure in it as one failure.
run_stage() {
  local name=$1 start=$SECONDS rc summary p f
  shift
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  summary=$(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$log" | tail -n 1)
  read -r p f <<<"${summary:-0 0}"
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
  fi
  echo "=== $name: $p passed, $f failed ($((SECONDS - start)) s)"
  passed=$((passed + p))
  failed=$((failed + f))
}

# The core, transport, API and MPI drop-in tests again under AddressSanitizer
# + UBSan (scripts/sanitize.sh builds only them, in build-asan/; the MPI
# tests preload the instrumented interposer after the ASan runtime). Each
# binary counts as one test: it fails on a non-zero exit or on any sanitizer
# report, a forked child's included. CHORUS_TEST_SANITIZERS=0 skips the stage.
if [ "${CHORUS_TEST_SANITIZERS:-1}" != 0 ]; then
  echo "=== sanitizers: core, lossy, transports, api and mpi tests under ASan + UBSan (CHORUS_TEST_SANITIZERS=0 skips them)"
  run_stage sanitizers env CHORUS_SANITIZE_LAYERS="core lossy transports api mpi" scripts/sanitize.sh asan
fi

# Ranks as threads over shared memory and TCP under ThreadSanitizer: the
# threaded transport and API tests, host streams (linked to a device stream
# too), the CUDA IPC overlay on the fake device, and the MPI drop-in's check
# programs
# (threads on their own communicators, mpi4py, Fortran) and hpcc with the
# instrumented interposer preloaded after the TSan runtime
# (scripts/sanitize.sh builds only them, in build-tsan/). Each binary counts
# as one test, failing on any report. CHORUS_TEST_SANITIZERS=0 skips this
# stage too.
if [ "${CHORUS_TEST_SANITIZERS:-1}" != 0 ]; then
  echo "=== tsan: threaded shm, TCP, host stream, API and MPI drop-in tests under ThreadSanitizer"
  run_stage tsan env CHORUS_SANITIZE_LAYERS="core transports api mpi" \
    CHORUS_SANITIZE_FILTER='/(host_stream|linked_stream|cuda_ipc_transport|transport_mux_wait|cuda_ipc_comm|shm_transport|tcp_transport|heartbeat|concurrent_comms|p2p|silent_peer|revoke|unauthenticated_connections|mpi_interposer|mpi_hpcc)_test$' \
    scripts/sanitize.sh tsan
fi

# The verbs transport's device tests on a soft-RoCE device in a qemu guest
# (docs/rdma.md), the mux waiting on shm and verbs at once, then the API's
# conformance and failure tests over CHORUS_TRANSPORT=ibverbs in the same boot, up to 3 ranks (the emulated
# guest takes minutes over the 4-, 5- and 8-rank cases; docs/testing.md has
# the full run); about 4 minutes in all. One "rdma-vm: skipped (<why>)" line
# where no guest can be had. CHORUS_RDMA_VM=0 skips them.
echo "=== rdma: verbs tests in the soft-RoCE guest (CHORUS_RDMA_VM=0 skips them)"
rdma_api_tests=()
for name in reduction_collectives data_movement_collectives p2p multiprocess dead_rank split revoke streams \
  concurrent_comms errors register; do
  rdma_api_tests+=("$CHORUS_BUILD_DIR/tests/api/${name}_test")
done
run_stage rdma env CHORUS_RDMA_VM_TIMEOUT=$((2 * TEST_TIMEOUT_S)) CHORUS_TRANSPORT=ibverbs \
  GTEST_FILTER='-*4ranks*:*5ranks*:*8ranks*' scripts/rdma-vm-tests.sh \
  "$CHORUS_BUILD_DIR/tests/transports/ibverbs_transport_test" "$CHORUS_BUILD_DIR/tests/transports/ibverbs_direct_test" \
  "$CHORUS_BUILD_DIR/tests/api/ibverbs_selection_test" "$CHORUS_BUILD_DIR/tests/core/transport_mux_wait_test" \
  "${rdma_api_tests[@]}"
finish
