#!/usr/bin/env bash
# Every GPU-side check of Chorus in one go, for a machine with an NVIDIA GPU
# (the lent device machine): builds with CUDA into build-gpu, then runs
#   1. the device tests: cuda_kernels_test (GPU kernels and the CUDA engine
#      against the CPU kernels), linked_stream_test (chorusStreamFromCuda on a
#      real CUDA stream too), workspace_test (page-locked staging),
#      user_buffer_kinds_test, streams_test, perf_cli_test, nccl_abi_test, and
#      the CUDA IPC transport's tests (run on the fake device everywhere);
#   2. all_reduce_perf -G 1 (device buffers, every result checked) with 2 and
#      4 ranks as threads and as processes (processes of one GPU exchange
#      device buffers over CUDA IPC; 2 processes once more with
#      CHORUS_TRANSPORT=shm, staged through host memory, for comparison);
#   3. the kernel benchmark (perf/kernels/cuda_reduce_benchmark: reduction
#      kernels against the device's copy bandwidth, target 0.85).
# Logs and a summary go to ${OUT:-build-gpu/gpu-check}. Exits non-zero when a
# step failed; every step runs anyway.
#
#   scripts/gpu-check.sh --pack   # here, before: puts GoogleTest (headers,
#                                 # static libraries, pkg-config files) in
#                                 # .gpu-deps/, which the GPU machine lacks
#   scripts/gpu-check.sh          # there, with .gpu-deps carried along
#
# The device machine has nvcc, meson and ninja but no GoogleTest; without
# .gpu-deps the tests are not built and step 1 is reported as skipped.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--pack" ]]; then
  deps=.gpu-deps
  rm -rf "$deps"
  mkdir -p "$deps/include" "$deps/lib/pkgconfig"
  cp -r /usr/include/gtest "$deps/include/"
  cp /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/x86_64-linux-gnu/libgtest_main.a "$deps/lib/"
  for pc in gtest gtest_main; do
    sed -e 's|^libdir=.*|libdir=${pcfiledir}/..|' -e 's|^includedir=.*|includedir=${pcfiledir}/../../include|' \
      "/usr/lib/x86_64-linux-gnu/pkgconfig/$pc.pc" > "$deps/lib/pkgconfig/$pc.pc"
  done
  grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >> .git/info/exclude
  echo "packed GoogleTest into $deps ($(du -sh "$deps" | cut -f1)); carry .gpu-deps to the GPU machine"
  exit 0
fi

build=build-gpu
out=${OUT:-$build/gpu-check}
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary"
failed=0
note() { echo "$*" | tee -a "$summary"; }
step() {  # step NAME COMMAND...: runs it, logs to $out/NAME.log, notes PASS/FAIL
  local name=$1; shift
  if "$@" > "$out/$name.log" 2>&1; then
    note "PASS $name"
  else
    note "FAIL $name (exit $?; $out/$name.log)"
    failed=1
  fi
}

export PATH=$PATH:/usr/local/cuda/bin
note "# $(date -u +%FT%TZ) $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi')"
tests=false
if [[ -d .gpu-deps ]]; then
  export PKG_CONFIG_PATH=$PWD/.gpu-deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  tests=true
fi
if [[ ! -d $build ]]; then
  meson setup "$build" --buildtype=release -Dcuda=enabled -Dtests=$tests -Dtorch=disabled -Dmpi=disabled \
    -Ducx=disabled -Dibverbs=disabled > "$out/setup.log" 2>&1 || { note "FAIL setup ($out/setup.log)"; exit 1; }
fi
ninja -C "$build" -j"$(nproc)" > "$out/build.log" 2>&1 || { note "FAIL build ($out/build.log)"; exit 1; }
note "PASS build"

if [[ $tests == true ]]; then
  for t in kernels/cuda_kernels_test core/linked_stream_test core/workspace_test core/user_buffer_kinds_test \
           api/streams_test perf/perf_cli_test nccl/nccl_abi_test core/cuda_ipc_transport_test \
           core/cuda_ipc_comm_test core/executor_memory_kinds_test; do
    if [[ -x $build/tests/$t ]]; then
      step "$(basename "$t")" timeout 600 "$build/tests/$t"
      grep -h 'SKIPPED\|Skipped' "$out/$(basename "$t").log" | head -3 | sed 's/^/  /' | tee -a "$summary"
    else
      note "MISSING $t"
    fi
  done
else
  note "SKIP tests (no .gpu-deps: run scripts/gpu-check.sh --pack where GoogleTest is installed, carry .gpu-deps)"
fi

sweep="-b 8 -e 64M -f 8 -n 20 -w 5 -c 1 -G 1"
for ranks in 2 4; do
  step "all_reduce_threads_$ranks" timeout 300 "$build/perf/all_reduce_perf" -t $ranks $sweep
done
# Ranks as processes through the launcher variables (WORLD_SIZE, RANK, ...).
processes() {  # processes N [NAME]: N ranks, logs under NAME (default processes_N)
  local n=$1 name=${2:-processes_$1} port=$((29500 + RANDOM % 1000)) pids=() rc=0
  local secret
  secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  for ((r = 0; r < n; r++)); do
    WORLD_SIZE=$n RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port CHORUS_SECRET=$secret \
      timeout 300 "$build/perf/all_reduce_perf" $sweep > "$out/${name}_rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  cat "$out/${name}_rank0.txt"
  return $rc
}
for ranks in 2 4; do
  step "all_reduce_processes_$ranks" processes $ranks
done
staged_processes() (export CHORUS_TRANSPORT=shm; processes 2 processes_2_shm)
step all_reduce_processes_2_shm staged_processes
step cuda_reduce_benchmark timeout 300 "$build/perf/kernels/cuda_reduce_benchmark" -b 256M -n 20
tail -3 "$out/cuda_reduce_benchmark.log" | sed 's/^/  /' | tee -a "$summary"
for f in "$out"/all_reduce_*.log; do
  grep -h 'Avg bus bandwidth\|Out of bounds' "$f" | sed "s|^|  $(basename "$f" .log): |" | tee -a "$summary"
  # The 64 MiB row: the CUDA IPC target is 2 processes' allreduce at 70 % of the copy bandwidth above.
  grep -h '^ *67108864 ' "$f" | head -1 | sed "s|^|  $(basename "$f" .log) 64M: |" | tee -a "$summary"
done
note "# done: $([[ $failed == 0 ]] && echo 'all passed' || echo 'some failed')"
exit $failed
