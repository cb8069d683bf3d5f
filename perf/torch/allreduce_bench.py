"""torch.distributed.all_reduce of float32 tensors: gloo vs chorus, side by side.

Every process joins one gloo group and one chorus group over the same ranks,
and for each size times the two alternately (gloo, chorus, gloo, ...), so the
machine's noise falls on both. Prints, per size, the median time per call
and the bus bandwidth (nccl-tests' definition for allreduce:
2 (n-1)/n * bytes / time), and chorus/gloo. Run with Debian's torch:

    PYTHONPATH=build/python /usr/bin/python3 perf/torch/allreduce_bench.py --nproc 2
"""
import argparse
import os
import statistics
import sys
import time


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def sizes(lo, hi):
    size = lo
    while size <= hi:
        yield size
        size *= 2


def time_calls(dist, tensor, group, calls):
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(tensor, group=group)
    return (time.perf_counter() - start) / calls


def worker(rank, args):
    import torch
    import torch.distributed as dist
    if "chorus" in args.backends:
        import torch_chorus  # noqa: F401  registers "chorus"

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.nproc)
    groups = {name: dist.new_group(backend=name) for name in args.backends}
    world = args.nproc
    rows = []
    for size in sizes(args.min_bytes, args.max_bytes):
        tensor = torch.ones(size // 4, dtype=torch.float32)
        # Enough calls that each timing lasts ~target ms on the slower backend.
        slowest = max(time_calls(dist, tensor, group, 2) for group in groups.values())
        estimate = max(3, min(2000, int(args.target_ms * 1e-3 / max(slowest, 1e-6))))
        agreed = torch.tensor([estimate])  # every rank must make the same number of calls
        dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
        calls = int(agreed.item())
        for name in groups:  # warm-up of both
            time_calls(dist, tensor, groups[name], 2)
        samples = {name: [] for name in groups}
        for _ in range(args.reps):
            for name, group in groups.items():
                samples[name].append(time_calls(dist, tensor, group, calls))
        if rank == 0:
            medians = {name: statistics.median(values) for name, values in samples.items()}
            busbw = {name: 2 * (world - 1) / world * size / t / 1e9 for name, t in medians.items()}
            rows.append((size, medians, busbw))
    if rank == 0:
        print(f"# torch.distributed.all_reduce float32, {world} processes, {os.cpu_count()} CPUs, "
              f"torch {torch.__version__}; median of {args.reps} alternated timings per size")
        names = list(groups)
        ratio = len(names) == 2
        print(f"{'bytes':>10}" + "".join(f" {n + '_us':>10}" for n in names)
              + "".join(f" {n + '_GB/s':>12}" for n in names) + (f" {'ratio':>6}" if ratio else ""))
        for size, medians, busbw in rows:
            print(f"{size:>10}" + "".join(f" {medians[n] * 1e6:>10.1f}" for n in names)
                  + "".join(f" {busbw[n]:>12.3f}" for n in names)
                  + (f" {busbw[names[1]] / busbw[names[0]]:>6.2f}" if ratio else ""))
        sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--min-bytes", type=parse_size, default=4 << 10)
    parser.add_argument("--max-bytes", type=parse_size, default=64 << 20)
    parser.add_argument("--reps", type=int, default=5, help="alternated timings per size and backend")
    parser.add_argument("--target-ms", type=float, default=100, help="length of one timing")
    parser.add_argument("--port", type=int, default=29541)
    parser.add_argument("--backends", default="gloo,chorus", type=lambda text: text.split(","),
                        help="groups to time, comma-separated (gloo alone shows gloo without Chorus's threads)")
    args = parser.parse_args()
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args,), nprocs=args.nproc)


if __name__ == "__main__":
    main()
