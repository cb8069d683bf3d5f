#!/usr/bin/env python3
"""Allreduce busbw of Chorus against Open MPI and Gloo on this host.

Runs, interleaved per size (for each size and repeat: chorus, chorus-tcp,
ompi-shm, ompi-tcp, gloo-ring, gloo-hd, so that a noisy moment hurts every
library alike), the same float32 sum allreduce with the same sizes and
iteration counts, every rank a process on 127.0.0.1:

  chorus      all_reduce_perf, env launch, default transport
  chorus-tcp  the same with CHORUS_TRANSPORT=tcp
  ompi-shm    perf/peers/mpi_allreduce_bench, mpirun --mca btl self,vader
  ompi-tcp    the same with --mca btl self,tcp over lo
  gloo-ring   perf/peers/gloo_allreduce_bench, AllreduceRing, TCP on lo
  gloo-hd     the same with AllreduceHalvingDoubling

Prints one table of busbw (GB/s, best of the repeats, out of place for
chorus and Open MPI, in place for Gloo which has no other form) with the
ratios chorus-tcp/gloo-ring, chorus-tcp/ompi-tcp and chorus/ompi-shm, and
writes compare.csv, compare.gp and compare.png (gnuplot) into the output
directory. A peer whose benchmark was not built (libopenmpi-dev or
libgloo-dev missing) or whose launcher is missing is skipped with a note.
Every run is bounded by timeout(1).
"""

import argparse
import csv
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ["chorus", "chorus-tcp", "ompi-shm", "ompi-tcp", "gloo-ring", "gloo-hd"]
RATIOS = [("chorus-tcp", "gloo-ring"), ("chorus-tcp", "ompi-tcp"), ("chorus", "ompi-shm")]


def parse_size(text):
    """'64M' -> 67108864 (K/M/G are powers of 1024, as all_reduce_perf)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip()
    if text and text[-1].lower() in units:
        return int(float(text[:-1]) * units[text[-1].lower()])
    return int(text)


def format_size(size):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def sizes_of(args):
    sizes, size = [], args.min_bytes
    while size <= args.max_bytes:
        sizes.append(size)
        size = size * args.factor if args.factor > 1 else size + (1 << 20)
    return sizes


def free_loopback_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunFailed(Exception):
    pass


def bounded(args, command):
    """The command under timeout(1): TERM at the limit, KILL 5 s later."""
    return ["timeout", "--kill-after=5", str(args.timeout)] + command


def run_processes(args, commands_and_envs):
    """Starts one process per (command, env), waits for all; returns rank
    0's stdout. Raises RunFailed with the tail of the failing output."""
    processes = []
    with tempfile.TemporaryDirectory(prefix="chorus-compare-") as log_dir:
        for rank, (command, env) in enumerate(commands_and_envs):
            log = open(os.path.join(log_dir, f"rank{rank}.log"), "w+")
            processes.append((subprocess.Popen(bounded(args, command), env=env, stdout=log,
                                               stderr=subprocess.STDOUT), log))
        failures = []
        for rank, (process, log) in enumerate(processes):
            try:
                code = process.wait(timeout=args.timeout + 15)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            log.seek(0)
            output = log.read()
            log.close()
            if rank == 0:
                rank0_output = output
            if code != 0:
                reason = "timed out" if code in (124, 137) else f"exit code {code}"
                tail = " | ".join(output.strip().splitlines()[-3:])
                failures.append(f"rank {rank} {reason}: {tail}")
        if failures:
            raise RunFailed("; ".join(failures))
        return rank0_output


def peer_busbw(output):
    """busbw of the one '<bytes> <time_us> <busbw> <wrong>' line."""
    for line in output.splitlines():
        fields = line.split()
        if line.startswith("#") or len(fields) != 4:
            continue
        if int(fields[3]) != 0:
            raise RunFailed(f"{fields[3]} wrong elements")
        return float(fields[2])
    raise RunFailed("no result line in: " + " | ".join(output.strip().splitlines()[-3:]))


def size_flags(args, size):
    return ["-b", str(size), "-e", str(size), "-n", str(args.iters), "-w", str(args.warmup)]


class Chorus:
    def __init__(self, args, transport):
        self.binary = os.path.join(args.build_dir, "perf", "all_reduce_perf")
        self.transport = transport

    def missing(self):
        return None if os.access(self.binary, os.X_OK) else f"{self.binary} not built"

    def busbw(self, args, size, work_dir):
        json_path = os.path.join(work_dir, "chorus.json")
        port, secret = free_loopback_port(), secrets.token_hex(16)
        runs = []
        for rank in range(args.ranks):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(args.ranks), CHORUS_ROOT=f"127.0.0.1:{port}", CHORUS_SECRET=secret)
            env.pop("CHORUS_TRANSPORT", None)
            if self.transport:
                env["CHORUS_TRANSPORT"] = self.transport
            runs.append(([self.binary] + size_flags(args, size) + ["-J", json_path], env))
        run_processes(args, runs)
        with open(json_path) as file:
            results = json.load(file)
        if results.get("outOfBounds", 0) != 0:
            raise RunFailed(f"{results['outOfBounds']} wrong results")
        return float(results["results"][0]["out_of_place"]["busbw_gbps"])


class OpenMpi:
    def __init__(self, args, btl):
        self.binary = os.path.join(args.build_dir, "perf", "peers", "mpi_allreduce_bench")
        self.btl = btl

    def missing(self):
        if not os.access(self.binary, os.X_OK):
            return f"{self.binary} not built (install libopenmpi-dev and reconfigure)"
        return None if shutil.which("mpirun") else "mpirun not found (install openmpi-bin)"

    def busbw(self, args, size, work_dir):
        # ob1 so that the btl choice holds (pml ucx would bypass the btls).
        mca = ["--mca", "pml", "ob1", "--mca", "btl", f"self,{self.btl}"]
        if self.btl == "tcp":
            mca += ["--mca", "btl_tcp_if_include", "lo"]
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                   "-np", str(args.ranks)] + mca + [self.binary] + size_flags(args, size)
        return peer_busbw(run_processes(args, [(command, dict(os.environ))]))


class Gloo:
    def __init__(self, args, algo):
        self.binary = os.path.join(args.build_dir, "perf", "peers", "gloo_allreduce_bench")
        self.algo = algo

    def missing(self):
        if os.access(self.binary, os.X_OK):
            return None
        return f"{self.binary} not built (install libgloo-dev and reconfigure)"

    def busbw(self, args, size, work_dir):
        store = tempfile.mkdtemp(prefix="gloo-store-", dir=work_dir)
        runs = []
        for rank in range(args.ranks):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks))
            runs.append(([self.binary, "-s", store, "-a", self.algo] + size_flags(args, size), env))
        return peer_busbw(run_processes(args, runs))


def make_backends(args):
    return {
        "chorus": Chorus(args, None),
        "chorus-tcp": Chorus(args, "tcp"),
        "ompi-shm": OpenMpi(args, "vader"),
        "ompi-tcp": OpenMpi(args, "tcp"),
        "gloo-ring": Gloo(args, "ring"),
        "gloo-hd": Gloo(args, "hd"),
    }


def measure(args, backends, sizes):
    """results[size][name] = best busbw, or a string saying why none."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="chorus-compare-") as work_dir:
        for size in sizes:
            row = results.setdefault(size, {})
            for _ in range(args.repeats):
                for name, backend in backends.items():
                    if isinstance(row.get(name), str):
                        continue  # failed once at this size: do not wait for it again
                    try:
                        value = backend.busbw(args, size, work_dir)
                        row[name] = max(value, row.get(name, 0.0))
                    except (RunFailed, OSError, ValueError, KeyError, IndexError) as error:
                        row[name] = f"failed: {error}"
                        print(f"{name} {format_size(size)}: {error}", file=sys.stderr)
            status = "  ".join(f"{name} {row[name]:.2f}" if isinstance(row[name], float) else f"{name} failed"
                               for name in backends)
            print(f"# {format_size(size):>5}: {status}", file=sys.stderr, flush=True)
    return results


def ratio(row, numerator, denominator):
    a, b = row.get(numerator), row.get(denominator)
    if isinstance(a, float) and isinstance(b, float) and b > 0:
        return a / b
    return None


def print_table(results, sizes):
    ratio_names = [f"{a}/{b}" for a, b in RATIOS]
    header = [f"{'size':>6}"] + [f"{name:>10}" for name in BACKENDS] + [f"{name:>18}" for name in ratio_names]
    print("# busbw in GB/s (best of the repeats); '-' = skipped, 'ERR' = failed")
    print(" ".join(header))
    for size in sizes:
        row = results[size]
        cells = [f"{format_size(size):>6}"]
        for name in BACKENDS:
            value = row.get(name)
            cells.append(f"{value:>10.4g}" if isinstance(value, float) else f"{'-' if value is None else 'ERR':>10}")
        for a, b in RATIOS:
            value = ratio(row, a, b)
            cells.append(f"{value:>18.2f}" if value is not None else f"{'-':>18}")
        print(" ".join(cells))


def write_csv(path, results, sizes):
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["bytes"] + BACKENDS + [f"{a}/{b}" for a, b in RATIOS])
        for size in sizes:
            row = results[size]
            cells = [size] + [f"{row[n]:.4f}" if isinstance(row.get(n), float) else "" for n in BACKENDS]
            cells += [f"{r:.3f}" if (r := ratio(row, a, b)) is not None else "" for a, b in RATIOS]
            writer.writerow(cells)


def write_plot(out_dir, args):
    """compare.gp and, when gnuplot is installed, compare.png."""
    script = os.path.join(out_dir, "compare.gp")
    png = os.path.join(out_dir, "compare.png")
    plots = ", ".join(f"'compare.csv' using 1:{column} with linespoints title columnheader({column})"
                      for column in range(2, 2 + len(BACKENDS)))
    with open(script, "w") as file:
        file.write(f"""set terminal pngcairo size 1100,700 enhanced font ',11'
set output 'compare.png'
set datafile separator ','
set datafile missing ''
set title 'allreduce float32 sum, {args.ranks} ranks on one host, busbw (best of {args.repeats})'
set xlabel 'message size (bytes)'
set ylabel 'busbw (GB/s)'
set logscale x 2
set format x '%.0b %BB'
set logscale y 10
set key top left
set grid
plot {plots}
""")
    if not shutil.which("gnuplot"):
        return f"gnuplot not found (install gnuplot-nox): wrote {script} only"
    result = subprocess.run(bounded(args, ["gnuplot", "compare.gp"]), cwd=out_dir, capture_output=True, text=True)
    if result.returncode != 0:
        return f"gnuplot failed: {result.stderr.strip()}"
    return f"plot: {png}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--ranks", type=int, default=2, help="ranks, one process each (default 2)")
    parser.add_argument("-b", "--min-bytes", type=parse_size, default=parse_size("1K"))
    parser.add_argument("-e", "--max-bytes", type=parse_size, default=parse_size("64M"))
    parser.add_argument("-f", "--factor", type=int, default=4, help="size multiplier (default 4)")
    parser.add_argument("-i", "--iters", type=int, default=20, help="timed iterations per size (default 20)")
    parser.add_argument("-w", "--warmup", type=int, default=5, help="warm-up iterations per size (default 5)")
    parser.add_argument("-r", "--repeats", type=int, default=1, help="runs per size and library, best kept")
    parser.add_argument("-o", "--out-dir", default="compare-out", help="where the CSV and the plot go")
    parser.add_argument("-B", "--build-dir", default=os.environ.get("CHORUS_BUILD_DIR", os.path.join(REPO_ROOT, "build")))
    parser.add_argument("-t", "--timeout", type=int, default=120, help="limit of each run in seconds")
    parser.add_argument("--only", default=",".join(BACKENDS), help="comma-separated subset of " + ",".join(BACKENDS))
    args = parser.parse_args()
    if args.ranks < 1 or args.min_bytes < 4 or args.min_bytes > args.max_bytes or args.repeats < 1:
        parser.error("need -n >= 1, 4 <= -b <= -e, -r >= 1")
    args.build_dir = os.path.abspath(args.build_dir)

    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BACKENDS]
    if unknown:
        parser.error(f"unknown library in --only: {', '.join(unknown)}")
    backends = {}
    for name, backend in make_backends(args).items():
        if name not in chosen:
            continue
        reason = backend.missing()
        if reason:
            print(f"skipping {name}: {reason}", file=sys.stderr)
        else:
            backends[name] = backend
    if not backends:
        print("nothing to run", file=sys.stderr)
        return 1

    sizes = sizes_of(args)
    results = measure(args, backends, sizes)
    print_table(results, sizes)
    os.makedirs(args.out_dir, exist_ok=True)
    write_csv(os.path.join(args.out_dir, "compare.csv"), results, sizes)
    print(f"csv: {os.path.abspath(os.path.join(args.out_dir, 'compare.csv'))}")
    print(write_plot(os.path.abspath(args.out_dir), args))
    failed = any(isinstance(value, str) for row in results.values() for value in row.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
