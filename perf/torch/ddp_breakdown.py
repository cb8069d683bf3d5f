"""Where a DDP training step of examples/torch_ddp/train.py spends its time,
with gloo and with chorus, in one job so that both see the same machine.

Every process joins a gloo group and a chorus group over the same ranks and
keeps five copies of the LeNet (same initial weights), trained in turn:
  local   without DDP: computation only, no communication;
  sync    without DDP, the ranks meeting after each backward pass in a 4-byte
          all_reduce on the chorus group (about a microsecond): the cost of
          waiting for the slowest rank, which any allreduce pays;
  free    under DDP with a comm hook that hands each bucket back at once,
          then the same meeting: DDP's own work (its autograd hooks, copying
          gradients into buckets and back) with a backend that costs nothing,
          the fastest any backend can make DDP here;
  gloo    under DDP on the gloo group;
  chorus  under DDP on the chorus group.
Each trains --block steps per round, for --rounds rounds, so load from
elsewhere falls on all of them.
Per variant it prints the median per step of forward, backward (under DDP
this includes launching the bucket allreduces and waiting for the last of
them), optimizer step and the whole step, and the images/s that makes.
backward(DDP) - backward(sync) is the communication the step did not hide,
plus whatever DDP's communication took from the computation's CPU.

Then, with the ranks otherwise idle, the median time of a blocking
all_reduce of each DDP bucket's size on each backend, alternated.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch/ddp_breakdown.py --nproc 2
"""
import argparse
import gc
import os
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch_ddp"))


def bucket_sizes(make, group, x, cap_mb):
    """The bytes of each DDP bucket in a step after the first (DDP rebuilds its
    buckets in gradient-ready order after step 1), by a hook that moves nothing."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    probe = DDP(make(), process_group=group, bucket_cap_mb=cap_mb)
    seen = []

    def record(state, bucket):
        seen.append(bucket.buffer().numel() * bucket.buffer().element_size())
        future = torch.futures.Future()
        future.set_result(bucket.buffer())
        return future

    probe.register_comm_hook(None, record)
    for _ in range(2):
        seen.clear()
        probe(x).sum().backward()
    return list(seen)


def keep_bucket(state, bucket):
    """A comm hook that moves nothing: the bucket's gradients come back as they are."""
    import torch
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def worker(rank, args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    import torch_chorus  # noqa: F401  registers "chorus"
    import train as example

    torch.set_num_threads(1)
    world = args.nproc
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    groups = {"gloo": dist.new_group(backend="gloo"), "chorus": dist.new_group(backend="chorus")}
    x_all, y_all = example.load(args.data, "train")

    def make():
        torch.manual_seed(0)
        return example.LeNet()

    variants = {"local": make(), "sync": make()}
    # DDP with a backend that costs nothing: a comm hook that hands each
    # bucket back at once, then the ranks meet as in "sync".
    variants["free"] = DDP(make(), process_group=groups["chorus"], bucket_cap_mb=args.bucket_cap_mb)
    variants["free"].register_comm_hook(None, keep_bucket)
    for name, group in groups.items():
        variants[name] = DDP(make(), process_group=group, bucket_cap_mb=args.bucket_cap_mb)
    optimizers = {name: torch.optim.SGD(m.parameters(), lr=0.02, momentum=0.9) for name, m in variants.items()}
    buckets = bucket_sizes(make, groups["gloo"], x_all[:args.batch], args.bucket_cap_mb)

    phases = {name: {"forward": [], "backward": [], "optimizer": [], "step": [], "cpu": [], "helpers": []} for name in variants}
    generator = torch.Generator().manual_seed(1 + rank)
    token = torch.zeros(1)
    for round_ in range(args.rounds + 1):  # round 0 is a warm-up
        for name, model in variants.items():
            group = groups.get(name, groups["gloo"])
            dist.barrier(group=group)
            cpu0 = time.process_time()  # every thread of this process
            main0 = time.thread_time()  # this thread: the computation (and DDP's reducer)
            for _ in range(args.block):
                index = torch.randint(0, len(x_all), (args.batch,), generator=generator)
                x, y = x_all[index], y_all[index]
                t0 = time.perf_counter()
                optimizers[name].zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(x), y)
                t1 = time.perf_counter()
                loss.backward()
                if name in ("sync", "free"):  # the ranks meet, as DDP's allreduce makes them, but move 4 bytes
                    dist.all_reduce(token, group=groups["chorus"])
                t2 = time.perf_counter()
                optimizers[name].step()
                t3 = time.perf_counter()
                if round_ > 0:
                    p = phases[name]
                    p["forward"].append(t1 - t0)
                    p["backward"].append(t2 - t1)
                    p["optimizer"].append(t3 - t2)
                    p["step"].append(t3 - t0)
            if round_ > 0:
                cpu = (time.process_time() - cpu0) / args.block
                phases[name]["cpu"].append(cpu)
                phases[name]["helpers"].append(cpu - (time.thread_time() - main0) / args.block)

    # Rank 0 reports the slowest rank's median of each phase.
    medians = {name: {k: statistics.median(v) for k, v in p.items()} for name, p in phases.items()}
    flat = torch.tensor([medians[n][k] for n in variants for k in ("forward", "backward", "optimizer", "step", "cpu", "helpers")],
                        dtype=torch.float64)
    dist.all_reduce(flat, op=dist.ReduceOp.MAX)

    # Blocking all_reduce of each bucket's size, ranks idle otherwise.
    allreduce = {}
    for size in buckets:
        tensor = torch.ones(size // 4)
        samples = {name: [] for name in groups}
        for rep in range(args.reps + 1):
            for name, group in groups.items():
                dist.barrier(group=group)
                start = time.perf_counter()
                for _ in range(args.calls):
                    dist.all_reduce(tensor, group=group)
                if rep > 0:
                    samples[name].append((time.perf_counter() - start) / args.calls)
        allreduce[size] = {name: statistics.median(v) for name, v in samples.items()}

    if rank == 0:
        print(f"# DDP step breakdown: LeNet, {world} processes, batch {args.batch} per rank, "
              f"{os.cpu_count()} CPUs, torch {torch.__version__}; medians over {args.rounds} rounds x "
              f"{args.block} steps, slowest rank; DDP buckets (bytes, in launch order): {buckets}")
        print(f"{'variant':<8} {'forward_ms':>10} {'backward_ms':>11} {'optim_ms':>9} {'step_ms':>8} {'cpu_ms':>7} "
              f"{'helper_cpu_ms':>13} {'images/s':>9}")
        values = flat.tolist()
        for i, name in enumerate(variants):
            fwd, bwd, opt, step, cpu, helpers = values[6 * i:6 * i + 6]
            print(f"{name:<8} {fwd * 1e3:>10.2f} {bwd * 1e3:>11.2f} {opt * 1e3:>9.2f} {step * 1e3:>8.2f} "
                  f"{cpu * 1e3:>7.2f} {helpers * 1e3:>13.2f} {world * args.batch / step:>9.0f}")
        print("# cpu_ms: CPU time per step of all the process's threads; helper_cpu_ms: of all but the training "
              "thread (the backend's threads: gloo's workers, chorus's stream, completion and transport threads)")
        print(f"# blocking all_reduce, float32, median of {args.reps} x {args.calls} calls, ranks otherwise idle")
        print(f"{'bytes':>10} {'gloo_us':>9} {'chorus_us':>10}")
        for size, times in allreduce.items():
            print(f"{size:>10} {times['gloo'] * 1e6:>9.1f} {times['chorus'] * 1e6:>10.1f}")
        sys.stdout.flush()
    dist.barrier()
    # The reducers go first, while the groups are registered: a group torn down
    # by a reducer at exit can deadlock in torch 1.13 (see train.py).
    variants.clear()
    model = loss = None
    gc.collect()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of the four variants in turn (default 6)")
    parser.add_argument("--block", type=int, default=25, help="steps of one variant per round (default 25)")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--reps", type=int, default=5, help="alternated all_reduce timings per size")
    parser.add_argument("--calls", type=int, default=20, help="all_reduce calls per timing")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Before the ranks load torch: OpenBLAS sizes its thread pool from it, and
    # torch.set_num_threads(1) does not shrink that pool.
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args,), nprocs=args.nproc)


if __name__ == "__main__":
    main()
