#!/usr/bin/env bash
# Builds Chorus with sanitizers and runs every *_test executable under them.
#
#   scripts/sanitize.sh asan   # AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer)
#   scripts/sanitize.sh tsan   # ThreadSanitizer
#   scripts/sanitize.sh all    # both, one after the other (never in parallel: 2 cores)
#
# Prints one line per binary ("PASS", "FAIL <why>") and a last line
# "N passed, M failed" counting binaries; exits non-zero when anything failed.
# A binary fails when it exits non-zero or when its output holds a sanitizer
# report, so a report in a forked child (whose exit status the parent may
# ignore) still counts. Full output of each binary is kept in
# <build dir>/sanitize-logs/<name>.log.
#
# Environment:
#   CHORUS_SANITIZE_BUILD_ROOT  prefix of the build dirs (default: build, giving
#                               build-asan and build-tsan in the repository root)
#   CHORUS_NINJA_JOBS           parallel compile jobs (default 2)
#   CHORUS_SANITIZE_TIMEOUT_S   per-binary time limit (default 300)
#   CHORUS_SANITIZE_FILTER      extended regex; only binaries whose path matches are
#                               built (with CHORUS_SANITIZE_LAYERS) and run
#   CHORUS_SANITIZE_LAYERS      test folders to build and run, e.g. "core transports api"
#                               (./test.sh's sanitizer stage); only their *_test
#                               targets and what they need are built. Default: all
#   CHORUS_SANITIZE_LARGE=1     also run large_count_test (2 GiB per rank; slow
#                               and memory-hungry under sanitizers, skipped by default)
#
# Under ASan (GCC 12's libasan) a child forked while another thread of its
# parent holds an allocator lock hangs on that lock (stuck in
# __sanitizer::SizeClassAllocator64::GetFromAllocator); the tests therefore
# fork only while single-threaded (tests/common/single_threaded_fork.h).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

mode=${1:-all}
case $mode in
  asan | tsan | all) ;;
  *)
    echo "usage: $0 asan|tsan|all" >&2
    exit 2
    ;;
esac

build_root=${CHORUS_SANITIZE_BUILD_ROOT:-build}
jobs=${CHORUS_NINJA_JOBS:-2}
timeout_s=${CHORUS_SANITIZE_TIMEOUT_S:-300}
filter=${CHORUS_SANITIZE_FILTER:-}
layers=${CHORUS_SANITIZE_LAYERS:-}
layers=${layers//,/ }
# "core transports api" -> core|transports|api, for the target and path patterns.
layer_pattern=$(echo $layers | tr ' ' '|')
passed=0
failed=0

# Lines that only a sanitizer prints; one of them in a log means a report.
report_pattern='^(==[0-9]+==ERROR: |SUMMARY: (Address|Leak|Thread|UndefinedBehavior)Sanitizer|WARNING: ThreadSanitizer:)|runtime error: '

configure_and_build() {
  local dir=$1 sanitize=$2
  # Under TSan, UCX's libucm (loaded with the transports) intercepts the
  # madvise of an exiting thread's stack and takes a lock TSan has already
  # torn down for that thread: every binary with a thread crashes at its
  # first thread exit. The TSan build therefore leaves UCX out.
  local extra=()
  [ "$sanitize" = thread ] && extra=(-Ducx=disabled)
  if [ -f "$dir/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$dir" -Db_sanitize="$sanitize" -Db_lundef=false \
      -Dbuildtype=debugoptimized "${extra[@]}" || return 1
  else
    meson setup "$dir" -Db_sanitize="$sanitize" -Db_lundef=false \
      -Dbuildtype=debugoptimized "${extra[@]}" || return 1
  fi
  # -k 0: build everything that still compiles, so one broken target (another
  # layer mid-edit) does not hide the rest of the suite.
  ninja -C "$dir" -j "$jobs" -k 0 $(layer_targets "$dir")
}

# The *_test targets of $layers (none: build everything), only those the
# filter matches when there is one. large_count_test only with
# CHORUS_SANITIZE_LARGE=1, since it is not run otherwise.
layer_targets() {
  local dir=$1
  [ -n "$layers" ] || return 0
  ninja -C "$dir" -t targets all | sed -En 's#^(tests/('"$layer_pattern"')/[A-Za-z0-9_]+_test): .*#\1#p' |
    { if [ "${CHORUS_SANITIZE_LARGE:-0}" = 1 ]; then cat; else grep -v '/large_count_test$'; fi; } |
    { if [ -n "$filter" ]; then grep -E "$filter"; else cat; fi; }
}

# Configures and builds `dir`; a failed build counts as one failure but the
# tests that did build still run (a test whose own target failed may be stale).
build_for() {
  local kind=$1 dir=$2 sanitize=$3
  mkdir -p "$dir"
  echo "=== $kind build in $dir"
  if configure_and_build "$dir" "$sanitize" >"$dir/sanitize-build.log" 2>&1; then
    return 0
  fi
  failed=$((failed + 1))
  if [ ! -d "$dir/tests" ]; then
    echo "$kind: build failed, see $dir/sanitize-build.log"
    return 1
  fi
  echo "$kind: build INCOMPLETE (counted as a failure), see $dir/sanitize-build.log; running what built"
  return 0
}

# Runs one binary with the sanitizer options already exported; updates the totals.
run_one() {
  local test=$1 logs=$2
  local name log rc reports verdict start
  name=$(basename "$test")
  log="$logs/$name.log"
  start=$SECONDS
  timeout --kill-after=10 "$timeout_s" "$test" >"$log" 2>&1
  rc=$?
  reports=$(grep -cE '^SUMMARY: [A-Za-z]+Sanitizer' "$log")
  if [ "$reports" -eq 0 ] && grep -qE "$report_pattern" "$log"; then reports=1; fi
  if [ "$rc" -eq 0 ] && [ "$reports" -eq 0 ]; then
    verdict="PASS"
    passed=$((passed + 1))
  else
    case $rc in
      0) verdict="FAIL (exit 0)" ;;
      124 | 137) verdict="FAIL (timed out after ${timeout_s} s)" ;;
      *) verdict="FAIL (exit $rc)" ;;
    esac
    verdict="$verdict, $reports sanitizer report(s), see $log"
    failed=$((failed + 1))
  fi
  printf '%-40s %s (%d s)\n' "$name" "$verdict" $((SECONDS - start))
}

run_suite() {
  local kind=$1 dir=$2
  local logs="$dir/sanitize-logs" test
  rm -rf "$logs"
  mkdir -p "$logs"
  if [ -n "$layers" ]; then
    mapfile -t tests < <(for layer in $layers; do
      find "$dir/tests/$layer" -maxdepth 1 -name '*_test' -type f -executable
    done | sort)
  else
    mapfile -t tests < <(find "$dir/tests" -name '*_test' -type f -executable | sort)
  fi
  if [ "${#tests[@]}" -eq 0 ]; then
    echo "$kind: no *_test executables under $dir/tests"
    failed=$((failed + 1))
    return
  fi
  for test in "${tests[@]}"; do
    if [ -n "$filter" ] && ! [[ $test =~ $filter ]]; then continue; fi
    if [[ $test == */large_count_test ]] && [ "${CHORUS_SANITIZE_LARGE:-0}" != 1 ]; then
      printf '%-40s %s\n' "$(basename "$test")" "SKIPPED (set CHORUS_SANITIZE_LARGE=1)"
      continue
    fi
    run_one "$test" "$logs"
  done
}

run_asan() {
  local dir="$build_root-asan"
  build_for asan+ubsan "$dir" address,undefined || return
  # chorusCommDestroy/Abort keep the handle's shell as a tombstone on purpose
  # (src/core/handles.h): a stale handle then reports invalid usage instead of
  # touching freed memory. Only that allocation is exempt from leak checks;
  # a leaked Communicator or anything else still fails.
  # The perf CLIs link Open MPI, whose own allocations are never freed;
  # keeping its plug-ins loaded and unwinding fully (fast unwinding loses the
  # frames of libraries built without frame pointers) attributes them to it.
  # The MPI tests' mpi4py program leaves the interpreter's objects at exit.
  local suppressions
  suppressions="$(realpath "$dir")/lsan.supp"  # absolute: some tests run programs in other directories
  printf 'leak:%s\n' 'std::make_unique<chorusComm>' libmpi.so libopen-pal.so libopen-rte.so libpmix.so \
    libevent mca_ python3 >"$suppressions"
  # abort_on_error=0 keeps the exit code meaningful; a forked child's report
  # is caught by the log scan.
  OMPI_MCA_mca_base_component_disable_dlclose=1 \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0 \
    LSAN_OPTIONS=suppressions="$suppressions":print_suppressions=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    GTEST_COLOR=no run_suite asan "$dir"
}

run_tsan() {
  local dir="$build_root-tsan"
  build_for tsan "$dir" thread || return
  # The MPI drop-in's tests run Open MPI, uninstrumented, under the preloaded
  # TSan runtime, which still sees its locks and copies through its
  # interceptors: it reports Open MPI's own lock order (ompi_sync_wait_mt,
  # the tcp BTL's add_procs/del_procs) and its shared-memory and matching
  # code (vader, ob1) under MPI_THREAD_MULTIPLE. Reports with an Open MPI
  # frame are suppressed by library name; the interposer's own code stays
  # checked.
  local suppressions
  suppressions="$(realpath "$dir")/tsan.supp"
  printf '%s\n' race:libopen-pal.so race:libmpi.so race:mca_pml_ob1.so race:mca_btl_vader.so \
    deadlock:libopen-pal.so deadlock:libmpi.so deadlock:mca_btl_tcp.so >"$suppressions"
  # halt_on_error=0: see every race of a binary in one run; TSan still exits 66.
  # die_after_fork=0: the forked-rank tests fork after the rendezvous root
  # thread started; TSan would otherwise kill every child at its first thread.
  TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:die_after_fork=0:suppressions="$suppressions" \
    GTEST_COLOR=no run_suite tsan "$dir"
}

case $mode in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all)
    run_asan
    run_tsan
    ;;
esac
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -gt 0 ]
