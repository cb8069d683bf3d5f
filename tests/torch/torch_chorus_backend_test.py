"""torch_chorus's own tests: every operation x dtype x reduce op against a
reference computed from the ranks' known inputs, uneven all-to-all,
subgroups, receives from any source, batches of sends and receives, the
monitored barrier, asynchronous work and futures, errors (a killed rank, a
stale store entry, unsupported input), and DDP trained with gloo and with
chorus.

Runs with Debian's /usr/bin/python3 (python3-torch) and the build's python/
on PYTHONPATH: build/tests/torch/torch_chorus_backend_test does both."""
import os
import signal
import sys
import time
import unittest

import numpy
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gtest_style  # noqa: E402
from harness import init, run_ranks  # noqa: E402

REDUCE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
                 torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128]
OPS = {"SUM": dist.ReduceOp.SUM, "AVG": dist.ReduceOp.AVG, "PRODUCT": dist.ReduceOp.PRODUCT,
       "MIN": dist.ReduceOp.MIN, "MAX": dist.ReduceOp.MAX}
COUNT = 37  # odd, so no size is a multiple of a vector width


def rank_input(rank, dtype, count=COUNT):
    """Small values whose sums, products and averages are exact in every dtype."""
    i = torch.arange(count)
    if dtype == torch.bool:
        return ((i + rank) % 3 == 0)
    if dtype.is_complex:
        return torch.complex((i % 3 + rank + 1).double(), (i % 2 - rank).double()).to(dtype)
    return (i % 3 + rank + 1).to(dtype)


def defined(op, dtype):
    if dtype.is_complex:
        return op in ("SUM", "AVG")
    if dtype == torch.bool:
        return op != "AVG"
    return True


def reference(op, dtype, world):
    xs = [rank_input(r, dtype) for r in range(world)]
    if dtype == torch.bool:
        stacked = torch.stack(xs)
        return stacked.any(0) if op in ("SUM", "MAX") else stacked.all(0)
    wide = torch.complex128 if dtype.is_complex else (torch.float64 if dtype.is_floating_point else torch.int64)
    stacked = torch.stack([x.to(wide) for x in xs])
    if op == "SUM":
        result = stacked.sum(0)
    elif op == "PRODUCT":
        result = stacked.prod(0)
    elif op == "MIN":
        result = stacked.min(0).values
    elif op == "MAX":
        result = stacked.max(0).values
    elif dtype.is_floating_point or dtype.is_complex:
        result = stacked.sum(0) / world
    else:
        result = torch.div(stacked.sum(0), world, rounding_mode="trunc")
    return result.to(dtype)


def same(actual, expected):
    if actual.dtype in (torch.float16, torch.bfloat16):
        return torch.allclose(actual.float(), expected.float(), rtol=1e-2, atol=1e-2)
    if actual.dtype.is_floating_point or actual.dtype.is_complex:
        return torch.allclose(actual, expected, rtol=1e-6, atol=1e-6)
    return torch.equal(actual, expected)


def check_reductions(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    wrong = []
    for dtype in REDUCE_DTYPES:
        for name, op in OPS.items():
            if not defined(name, dtype):
                continue
            want = reference(name, dtype, world)
            t = rank_input(rank, dtype)
            dist.all_reduce(t, op=op)
            if not same(t, want):
                wrong.append(f"all_reduce {name} {dtype}: {t[:6]} != {want[:6]}")
            root = world - 1
            t = rank_input(rank, dtype)
            dist.reduce(t, root, op=op)
            if rank == root and not same(t, want):
                wrong.append(f"reduce {name} {dtype}")
            # reduce_scatter: rank r's j-th input is rank_input(r) shifted by j.
            inputs = [rank_input(rank, dtype) for _ in range(world)]
            out = torch.zeros_like(inputs[0])
            dist.reduce_scatter(out, inputs, op=op)
            if not same(out, want):
                wrong.append(f"reduce_scatter {name} {dtype}")
            flat_out = torch.zeros_like(inputs[0])
            dist.reduce_scatter_tensor(flat_out, torch.cat(inputs), op=op) if hasattr(dist, "reduce_scatter_tensor") \
                else dist._reduce_scatter_base(flat_out, torch.cat(inputs), op=op)
            if not same(flat_out, want):
                wrong.append(f"_reduce_scatter_base {name} {dtype}")
    # Non-contiguous and empty tensors.
    t = torch.arange(12.).reshape(3, 4).t() * (rank + 1)
    dist.all_reduce(t)
    if not torch.equal(t, torch.arange(12.).reshape(3, 4).t() * (world * (world + 1) // 2)):
        wrong.append("all_reduce of a transposed tensor")
    empty = torch.zeros(0)
    dist.all_reduce(empty)
    # PREMUL_SUM: sum of factor * x.
    if hasattr(dist, "_make_nccl_premul_sum"):
        t = rank_input(rank, torch.float32)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        if not same(t, reference("SUM", torch.float32, world) * 0.5):
            wrong.append("PREMUL_SUM 0.5")
    # coalesced
    ts = [rank_input(rank, torch.float32, 5), rank_input(rank, torch.float32, 9)]
    dist.all_reduce_coalesced(ts)
    if not (same(ts[0], reference("SUM", torch.float32, world)[:5]) and
            same(ts[1], reference("SUM", torch.float32, world)[:9])):
        wrong.append("all_reduce_coalesced")
    assert not wrong, "\n".join(wrong)


def check_data_movement(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    wrong = []
    for dtype in REDUCE_DTYPES + [torch.int16, torch.float16]:
        mine = rank_input(rank, dtype)
        everyone = [rank_input(r, dtype) for r in range(world)]
        for root in range(world):
            t = mine.clone()
            dist.broadcast(t, root)
            if not torch.equal(t, everyone[root]):
                wrong.append(f"broadcast {dtype} root {root}")
        outs = [torch.zeros_like(mine) for _ in range(world)]
        dist.all_gather(outs, mine)
        if not all(torch.equal(o, e) for o, e in zip(outs, everyone)):
            wrong.append(f"all_gather {dtype}")
        flat = torch.zeros(world * COUNT, dtype=dtype)
        dist._all_gather_base(flat, mine)
        if not torch.equal(flat, torch.cat(everyone)):
            wrong.append(f"_all_gather_base {dtype}")
        root = world - 1
        gathered = [torch.zeros_like(mine) for _ in range(world)] if rank == root else None
        dist.gather(mine, gathered, dst=root)
        if rank == root and not all(torch.equal(o, e) for o, e in zip(gathered, everyone)):
            wrong.append(f"gather {dtype}")
        out = torch.zeros_like(mine)
        dist.scatter(out, everyone if rank == 0 else None, src=0)
        if not torch.equal(out, everyone[rank]):
            wrong.append(f"scatter {dtype}")
        # all_to_all with equal blocks: block j of rank r is rank_input(r) + j.
        sends = [(rank_input(rank, dtype, 4).to(torch.int64) + j).to(dtype) for j in range(world)]
        recvs = [torch.zeros(4, dtype=dtype) for _ in range(world)]
        dist.all_to_all(recvs, sends)
        want = [(rank_input(r, dtype, 4).to(torch.int64) + rank).to(dtype) for r in range(world)]
        if not all(torch.equal(a, b) for a, b in zip(recvs, want)):
            wrong.append(f"all_to_all {dtype}")
    # allgather_coalesced: two tensors of different shapes.
    ins = [torch.full((2, 3), float(rank)), torch.full((5,), float(10 + rank))]
    outs = [[torch.zeros(2, 3), torch.zeros(5)] for _ in range(world)]
    dist.all_gather_coalesced(outs, ins)
    for r in range(world):
        if not (torch.equal(outs[r][0], torch.full((2, 3), float(r))) and
                torch.equal(outs[r][1], torch.full((5,), float(10 + r)))):
            wrong.append("all_gather_coalesced")
    assert not wrong, "\n".join(wrong)


def check_uneven_alltoall(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    # Rank r sends (r + j + 1) rows of 3 values to rank j, each row r*100 + j.
    in_splits = [rank + j + 1 for j in range(world)]
    out_splits = [r + rank + 1 for r in range(world)]
    inp = torch.cat([torch.full((n, 3), float(rank * 100 + j)) for j, n in enumerate(in_splits)])
    out = torch.zeros(sum(out_splits), 3)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = torch.cat([torch.full((n, 3), float(r * 100 + rank)) for r, n in enumerate(out_splits)])
    assert torch.equal(out, want), f"{out[:, 0].tolist()} != {want[:, 0].tolist()}"
    # Zero rows to some peers.
    in_splits = [0 if j == rank else 2 for j in range(world)]
    out_splits = [0 if r == rank else 2 for r in range(world)]
    inp = torch.arange(sum(in_splits), dtype=torch.int64) + 1000 * rank
    out = torch.full((sum(out_splits),), -1, dtype=torch.int64)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = []
    for r in range(world):
        if r == rank:
            continue
        first = sum(0 if j == r else 2 for j in range(rank))
        want += [1000 * r + first, 1000 * r + first + 1]
    assert out.tolist() == want, f"{out.tolist()} != {want}"


def check_subgroups_p2p_async(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    odds = dist.new_group([r for r in range(world) if r % 2 == 1])
    mine = evens if rank % 2 == 0 else odds
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=mine)
    assert t.item() == sum(r for r in range(world) if r % 2 == rank % 2), t
    # p2p around a ring, non-blocking both ways.
    right, left = (rank + 1) % world, (rank - 1) % world
    out = torch.full((1000,), float(rank))
    got = torch.zeros(1000)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, right), dist.P2POp(dist.irecv, got, left)])
    for req in reqs:
        req.wait()
    assert torch.equal(got, torch.full((1000,), float(left))), got[:3]
    if world > 1:
        if rank == 0:
            dist.send(torch.arange(7.), 1)
        elif rank == 1:
            r = torch.zeros(7)
            dist.recv(r, 0)
            assert torch.equal(r, torch.arange(7.))
    # Several works in flight; each future carries its own tensor.
    tensors = [torch.full((4096,), float(rank + k)) for k in range(5)]
    works = [dist.all_reduce(x, async_op=True) for x in tensors]
    futures = [w.get_future() for w in works]
    for k, fut in enumerate(futures):
        value = fut.wait()[0]
        assert value[0].item() == sum(r + k for r in range(world)), (k, value[0])
    assert all(w.is_completed() and w.is_success() for w in works)
    chained = dist.all_reduce(torch.ones(3), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    assert torch.equal(chained.wait(), torch.full((3,), 2.0 * world))
    dist.barrier()


def check_any_source(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    # Every other rank sends rank 0 two messages; rank 0 takes the last
    # rank's first one by source, every other one from any source.
    if rank == 0:
        taken = {src: 0 for src in range(1, world)}
        first = torch.zeros(3)
        dist.recv(first, world - 1)
        assert torch.equal(first, torch.full((3,), 10.0 * (world - 1))), first
        taken[world - 1] = 1
        for k in range(2 * (world - 1) - 1):
            got = torch.zeros(3)
            if k % 2:
                work = dist.irecv(got)
                work.wait()
                src = work._source_rank()
            else:
                src = dist.recv(got)
            assert 0 < src < world and taken[src] < 2, (src, taken)
            assert torch.equal(got, torch.full((3,), 10.0 * src + taken[src])), (src, got)
            taken[src] += 1
        assert all(n == 2 for n in taken.values()), taken
    else:
        for k in range(2):
            dist.send(torch.full((3,), 10.0 * rank + k), 0)
    # Nobody sends: the receive fails within its group's timeout.
    quick = dist.new_group(timeout=__import__("datetime").timedelta(seconds=2))
    if rank == 0:
        start = time.monotonic()
        try:
            dist.recv(torch.zeros(1), group=quick)
        except RuntimeError as error:
            assert "any source" in str(error) and "timed out" in str(error), error
        else:
            raise AssertionError("recv from any source with no sender did not raise")
        assert time.monotonic() - start < 10
    dist.barrier()


def check_batch_receives_first(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    # Every rank receives from every peer before it sends: issued one by
    # one, the first receive would hold each rank's communicator; a batch
    # is issued as one group.
    ops, got = [], {}
    for peer in range(world):
        if peer != rank:
            got[peer] = torch.full((1000 + peer,), -1.0)
            ops.append(dist.P2POp(dist.irecv, got[peer], peer))
            ops.append(dist.P2POp(dist.isend, torch.full((1000 + rank,), float(rank)), peer))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for peer, tensor in got.items():
        assert torch.equal(tensor, torch.full((1000 + peer,), float(peer))), (peer, tensor[:3])
    # Inside a block: works wait for its end, and only send and recv may be called.
    group = dist.distributed_c10d._get_default_group()
    right, left = (rank + 1) % world, (rank - 1) % world
    got = torch.zeros(5)
    group._start_coalescing()
    works = [group.recv([got], left, 0), group.send([torch.full((5,), float(rank))], right, 0)]
    for call in (lambda: works[0].wait(), lambda: dist.all_reduce(torch.ones(1))):
        try:
            call()
        except RuntimeError as error:
            assert "coalescing block" in str(error), error
        else:
            raise AssertionError("a wait or a collective inside a coalescing block did not raise")
    assert not works[0].is_completed()
    group._end_coalescing(works)
    for work in works:
        work.wait()
    assert torch.equal(got, torch.full((5,), float(left))), got
    assert works[0]._source_rank() == left
    dist.barrier()


def check_monitored_barrier(rank, world, store_dir):
    from datetime import timedelta
    init("chorus", rank, world, store_dir)
    group = dist.distributed_c10d._get_default_group()

    def expect(call, text):
        try:
            call()
        except RuntimeError as error:
            assert text in str(error), error
        else:
            raise AssertionError(f"no error saying {text!r}")

    group.monitored_barrier(timedelta(seconds=10))  # everyone arrives
    # The last rank stays away: rank 0 names it, the others hear nothing back.
    if rank == 0:
        expect(lambda: group.monitored_barrier(timedelta(seconds=1)),
               f"Rank {world - 1} failed to pass monitoredBarrier in 1000 ms")
    elif rank != world - 1:
        expect(lambda: group.monitored_barrier(timedelta(seconds=1)),
               f"Rank {rank} successfully reached monitoredBarrier, but received errors")
    # Nobody else comes: rank 0 names every rank, or runs out of time at once.
    if rank == 0:
        missing = ", ".join(str(r) for r in range(1, world))
        expect(lambda: group.monitored_barrier(timedelta(milliseconds=200), True),
               f"Ranks {missing} failed to pass monitoredBarrier")
        expect(lambda: group.monitored_barrier(timedelta(seconds=0)), "Rank 0 timed out in monitoredBarrier")
    dist.barrier()  # the communicator is untouched


def check_clear_errors(rank, world, store_dir):
    init("chorus", rank, world, store_dir)
    cases = {
        "BAND": lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND),
        "int16": lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16)),
    }
    for what, call in cases.items():
        try:
            call()
        except RuntimeError as error:
            assert "Chorus" in str(error) or "chorus" in str(error), (what, error)
        else:
            raise AssertionError(f"{what} did not raise")
    dist.barrier()  # the group still works


def killed_rank(rank, world, store_dir):
    init("chorus", rank, world, store_dir, timeout_s=5)
    dist.all_reduce(torch.ones(10))
    if rank == world - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.5)
    start = time.monotonic()
    try:
        for _ in range(3):
            dist.all_reduce(torch.ones(1 << 16))
    except RuntimeError as error:
        elapsed = time.monotonic() - start
        return str(error), elapsed
    raise AssertionError("no error after a rank was killed")


def ddp_weights(rank, world, store_dir, backend, steps):
    init(backend, rank, world, store_dir)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(1 + rank)
    for _ in range(steps):
        x = torch.randn(8, 1, 8, 8, generator=gen)
        y = torch.randint(0, 10, (8,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]  # tensors do not outlive the process


def ddp_hook(rank, world, store_dir, hook_name):
    import torch_chorus
    init("chorus", rank, world, store_dir)
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(None, getattr(torch_chorus.hooks, hook_name))
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(rank))
    ddp(x).sum().backward()
    return model.weight.grad.numpy().copy()


def join_from_store(store, timeout_s):
    """Joins as rank 1 of 2 through `store`; returns (error text, seconds)."""
    from datetime import timedelta
    import torch_chorus
    start = time.monotonic()
    try:
        torch_chorus.ProcessGroupChorus(store, 1, 2, timedelta(seconds=timeout_s))
    except RuntimeError as error:
        return str(error), time.monotonic() - start
    raise AssertionError("joining through a bad store entry succeeded")


class ChorusRendezvousTest(unittest.TestCase):
    """Bad store entries fail cleanly, within the timeout, in this process."""

    def test_stale_store_entry_fails_within_the_timeout(self):
        from datetime import timedelta
        import torch_chorus
        store = dist.HashStore()
        # A finished job's id: its rendezvous listener is gone.
        torch_chorus.ProcessGroupChorus(store, 0, 1, timedelta(seconds=5))
        message, elapsed = join_from_store(store, 3)
        self.assertIn("could not join", message)
        self.assertLess(elapsed, 10.0, message)

    def test_mangled_store_entry_is_refused(self):
        from datetime import timedelta
        import torch_chorus
        store = dist.HashStore()
        torch_chorus.ProcessGroupChorus(store, 0, 1, timedelta(seconds=5))
        entry = bytearray(store.get("chorus/unique_id"))
        entry[10] ^= 0x5A  # a secret byte: the id's checksum no longer matches
        store.set("chorus/unique_id", bytes(entry))
        message, elapsed = join_from_store(store, 3)
        self.assertIn("corrupt unique id", message)
        self.assertLess(elapsed, 1.0)

    def test_store_entry_of_another_kind_is_refused(self):
        store = dist.HashStore()
        store.set("chorus/unique_id", b"not a chorus id")
        message, elapsed = join_from_store(store, 3)
        self.assertIn("not a Chorus id", message)
        self.assertLess(elapsed, 1.0)


class ChorusBackendTest(unittest.TestCase):
    def test_reductions_every_dtype_and_op_2_ranks(self):
        run_ranks(check_reductions, 2)

    def test_reductions_every_dtype_and_op_3_ranks(self):
        run_ranks(check_reductions, 3)

    def test_data_movement_every_dtype_3_ranks(self):
        run_ranks(check_data_movement, 3)

    def test_uneven_alltoall_3_ranks(self):
        run_ranks(check_uneven_alltoall, 3)

    def test_subgroups_p2p_and_futures_4_ranks(self):
        run_ranks(check_subgroups_p2p_async, 4)

    def test_recv_from_any_source_3_ranks(self):
        run_ranks(check_any_source, 3)

    def test_batch_with_receives_first_3_ranks(self):
        run_ranks(check_batch_receives_first, 3)

    def test_monitored_barrier_3_ranks(self):
        run_ranks(check_monitored_barrier, 3)

    def test_unsupported_input_raises_clearly(self):
        run_ranks(check_clear_errors, 2)

    def test_killed_rank_raises_on_every_survivor_within_the_timeout(self):
        values = run_ranks(killed_rank, 3, expect_dead=(2,), deadline_s=60)
        self.assertEqual(sorted(values), [0, 1])
        for rank, (message, elapsed) in values.items():
            self.assertIn("Chorus", message)
            self.assertIn("peer 2", message)  # names the dead rank
            self.assertLess(elapsed, 15.0, f"rank {rank} took {elapsed:.1f} s: {message}")

    def test_ddp_same_weights_as_gloo(self):
        gloo = run_ranks(ddp_weights, 2, "gloo", 5)
        chorus = run_ranks(ddp_weights, 2, "chorus", 5)
        for rank in (0, 1):
            for a, b in zip(gloo[rank], chorus[rank]):
                # Two ranks: each sum is x0 + x1 in both backends, and DDP divides
                # both the same way, so the bits match.
                self.assertTrue(numpy.array_equal(a, b), f"rank {rank}: max diff {abs(a - b).max()}")
        for a, b in zip(chorus[0], chorus[1]):
            self.assertTrue(numpy.array_equal(a, b))

    def test_ddp_comm_hooks(self):
        exact = run_ranks(ddp_weights, 2, "chorus", 1)  # warm-up of the path, not compared
        self.assertEqual(len(exact), 2)
        for hook in ("fp16_wire_hook", "bf16_wire_hook", "one_bit_ef_hook", "sign_vote_hook", "gossip_hook"):
            grads = run_ranks(ddp_hook, 2, hook)
            self.assertTrue(numpy.isfinite(grads[0]).all(), hook)
            self.assertTrue(numpy.array_equal(grads[0], grads[1]), hook)


if __name__ == "__main__":
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite([loader.loadTestsFromTestCase(ChorusRendezvousTest),
                                loader.loadTestsFromTestCase(ChorusBackendTest)])
    sys.exit(gtest_style.run(suite))
