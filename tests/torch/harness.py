"""Runs a function on every rank of a small torch.distributed job, each rank a
spawned process, and reports each rank's failure with its traceback. The job
meets in a FileStore in a fresh directory; every wait has a deadline."""
import os
import queue
import tempfile
import traceback
from datetime import timedelta

import torch.distributed as dist
import torch.multiprocessing as mp


def init(backend, rank, world, store_dir, timeout_s=30, **kwargs):
    store = dist.FileStore(os.path.join(store_dir, "store"), world)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s), **kwargs)


def _entry(fn, rank, world, store_dir, args, results):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)
    import torch_chorus  # noqa: F401  registers "chorus" in the child
    try:
        value = fn(rank, world, store_dir, *args)
        results.put((rank, "ok", value))
    except BaseException:  # report everything, including SystemExit
        results.put((rank, "error", traceback.format_exc()))
    finally:
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass


def run_ranks(fn, world, *args, deadline_s=120, expect_dead=()):
    """Runs fn(rank, world, store_dir, *args) on `world` processes; returns
    {rank: value}. Raises AssertionError naming every rank that failed or did
    not report before the deadline. Ranks in `expect_dead` may die silently."""
    context = mp.get_context("spawn")
    results = context.Queue()
    with tempfile.TemporaryDirectory(prefix="torch_chorus_") as store_dir:
        procs = [context.Process(target=_entry, args=(fn, r, world, store_dir, args, results), daemon=True)
                 for r in range(world)]
        for p in procs:
            p.start()
        values, errors = {}, {}
        expected = world - len(expect_dead)
        import time
        end = time.monotonic() + deadline_s
        while len(values) + len(errors) < expected and time.monotonic() < end:
            try:
                rank, status, value = results.get(timeout=max(0.1, min(1.0, end - time.monotonic())))
            except queue.Empty:
                continue
            (values if status == "ok" else errors)[rank] = value
        for p in procs:
            p.join(timeout=max(0.0, end - time.monotonic()) if not errors else 5)
            if p.is_alive():
                p.kill()
                p.join()
        missing = [r for r in range(world) if r not in values and r not in errors and r not in expect_dead]
        problems = [f"rank {r}:\n{e}" for r, e in sorted(errors.items())]
        problems += [f"rank {r}: no result within {deadline_s} s" for r in missing]
        if problems:
            raise AssertionError("\n".join(problems))
        return values
