#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) in
# their own build directory and runs each on its seed corpus for a while.
#
#   scripts/fuzz.sh [--seconds N | --runs N] [--jobs J] [--work DIR] [--gtest] [target ...]
#
# --seconds N  run time per target (default 60)
# --runs N     instead: N inputs per target from seed 1 on the seed corpus
#              alone, the same inputs every time (./test.sh's smoke run)
# --jobs J     targets run at once (default 1), each under `nice -n 10`
# --work DIR   where the growing corpora, logs and findings go (default
#              build-fuzz/work): new corpus entries never land in the
#              repository; tests/fuzz/corpus/<target> is only read
# --gtest      report each target as a GoogleTest case (./test.sh counts it)
# targets      a subset of: unique_id rendezvous shrink tcp_wire shm
#              acceptor algo_spec tune_file size ifname call_check
#              (default: all)
#
# Prints per target the inputs run, the coverage (edges) and the findings
# (crash-*, leak-*, timeout-*, oom-* files in the work directory, each a
# reproducer: build-fuzz/tests/fuzz/<target>_fuzz <file>). Exits non-zero
# when anything was found or did not build. Without clang (or libFuzzer)
# it says so and exits 0: scripts/setup.sh installs them.
set -uo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(unique_id rendezvous shrink tcp_wire acceptor shm algo_spec tune_file size ifname call_check)
seconds=60
runs=0
jobs=1
work=
gtest=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --gtest) gtest=1; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ "${#targets[@]}" -gt 0 ] || targets=("${ALL_TARGETS[@]}")
build=${CHORUS_FUZZ_BUILD_DIR:-build-fuzz}
work=${work:-$build/work}

skip() {
  echo "fuzz.sh: skipped: $1 (scripts/setup.sh installs clang and libclang-rt-dev)"
  [ "$gtest" -eq 1 ] && echo "[  PASSED  ] 0 tests."
  exit 0
}
command -v clang++ > /dev/null || skip "clang++ not found"
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2> /dev/null || skip "clang cannot link libFuzzer"

# Configure once; later runs only rebuild what changed.
if [ ! -f "$build/meson-private/coredata.dat" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=false --buildtype=plain -Doptimization=1 \
    -Dcuda=disabled -Ducx=disabled -Dibverbs=disabled -Dhwloc=disabled -Dmpi=disabled -Dtorch=disabled -Dnccl_abi=disabled \
    > "$build.setup.log" 2>&1 || { cat "$build.setup.log"; echo "fuzz.sh: configuring $build failed"; exit 1; }
  rm -f "$build.setup.log"
fi
ninja_targets=()
for t in "${targets[@]}"; do ninja_targets+=("tests/fuzz/${t}_fuzz"); done
if ! nice -n 10 ninja -C "$build" ${CHORUS_NINJA_JOBS:+-j "$CHORUS_NINJA_JOBS"} "${ninja_targets[@]}" > "$build/ninja.log" 2>&1; then
  tail -n 40 "$build/ninja.log"
  echo "fuzz.sh: building the fuzz targets failed"
  [ "$gtest" -eq 1 ] && echo "[  FAILED  ] 1 test, listed below:"
  exit 1
fi

run_target() {
  local t=$1 dir="$work/$1"
  rm -rf "$dir/findings"
  # --runs: a fixed number of inputs from a fixed seed on the seed corpus
  # alone, the same every time (a check must not depend on luck or history).
  local budget=(-max_total_time="$seconds")
  if [ "$runs" -gt 0 ]; then
    rm -rf "$dir/corpus"
    budget=(-runs="$runs" -seed=1)
  fi
  mkdir -p "$dir/corpus" "$dir/findings"
  local start_ms=$(date +%s%3N)
  # The growing corpus comes first: libFuzzer adds new inputs to it only.
  nice -n 10 "$build/tests/fuzz/${t}_fuzz" "$dir/corpus" "tests/fuzz/corpus/$t" \
    "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/findings/" > "$dir/log.txt" 2>&1
  echo $? > "$dir/rc"
  echo $(($(date +%s%3N) - start_ms)) > "$dir/ms"
}

mkdir -p "$work"
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

passed=0
failed_names=()
printf '%-11s %12s %8s %8s  %s\n' target runs edges corpus findings
for t in "${targets[@]}"; do
  dir="$work/$t"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log.txt" | tail -n 1)
  edges=$(grep -o 'cov: [0-9]*' "$dir/log.txt" | tail -n 1 | cut -d' ' -f2)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  findings=$(find "$dir/findings" -type f | wc -l)
  rc=$(cat "$dir/rc")
  [ "$gtest" -eq 1 ] && echo "[ RUN      ] Fuzz.$t"
  printf '%-11s %12s %8s %8s  %s\n' "$t" "${runs:-?}" "${edges:-?}" "$corpus" "$findings"
  if [ "$rc" -ne 0 ] || [ "$findings" -gt 0 ]; then
    grep -E 'ERROR|FUZZ_CHECK|SUMMARY|^ +#[0-9]+ ' "$dir/log.txt" | head -n 20
    find "$dir/findings" -type f -printf '  reproduce: '"$build"'/tests/fuzz/'"$t"'_fuzz %p\n'
    failed_names+=("$t")
    [ "$gtest" -eq 1 ] && echo "[  FAILED  ] Fuzz.$t ($(cat "$dir/ms") ms)"
  else
    passed=$((passed + 1))
    [ "$gtest" -eq 1 ] && echo "[       OK ] Fuzz.$t ($(cat "$dir/ms") ms)"
  fi
done
echo "work directory: $work"
if [ "$gtest" -eq 1 ]; then
  [ "$passed" -gt 0 ] && echo "[  PASSED  ] $passed tests."
  [ "${#failed_names[@]}" -gt 0 ] && echo "[  FAILED  ] ${#failed_names[@]} tests, listed below:"
fi
[ "${#failed_names[@]}" -eq 0 ]
