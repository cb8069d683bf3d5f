"""DDP communication hooks on Chorus's explicit non-exact collectives.

    model.register_comm_hook(None, torch_chorus.hooks.fp16_wire_hook)

Every hook needs the model's process group to be a "chorus" group. Each
returns a future of the bucket's averaged gradient, as DDP expects.
"""
import torch
import torch.distributed as dist

from . import _C


def _chorus_group(state):
    group = state if state is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(group, _C.ProcessGroupChorus):
        raise TypeError("torch_chorus hooks need a process group of the 'chorus' backend")
    return group


def _compressed(state, bucket, wire):
    group = _chorus_group(state)
    tensor = bucket.buffer()
    if tensor.dtype != torch.float32:
        raise TypeError(f"torch_chorus compressed hooks take float32 gradients, got {tensor.dtype}")
    world = group.size()
    future = group._allreduce_compressed(tensor, wire, bucket.index()).get_future()

    def average(fut):
        result = fut.value()[0]
        return result.div_(world)

    return future.then(average)


def fp16_wire_hook(state, bucket):
    """Sum with float16 on the wire (float32 accumulation), then average."""
    return _compressed(state, bucket, _C.WIRE_FP16)


def bf16_wire_hook(state, bucket):
    """Sum with bfloat16 on the wire, then average."""
    return _compressed(state, bucket, _C.WIRE_BF16)


def one_bit_ef_hook(state, bucket):
    """1-bit with error feedback: each rank keeps its residual per bucket. The
    result is already a mean of scaled signs, so it is not divided again."""
    group = _chorus_group(state)
    tensor = bucket.buffer()
    future = group._allreduce_compressed(tensor, _C.WIRE_ONE_BIT_EF, bucket.index()).get_future()
    return future.then(lambda fut: fut.value()[0])


def sign_vote_hook(state, bucket):
    """Lion Cub's / signSGD's majority vote: the bucket becomes sign(sum of signs)."""
    group = _chorus_group(state)
    tensor = bucket.buffer()
    future = group._allreduce_compressed(tensor, _C.WIRE_SIGN_VOTE, bucket.index()).get_future()
    return future.then(lambda fut: fut.value()[0])


def gossip_hook(state, bucket):
    """GossipGraD: average the bucket with one partner per step instead of all
    ranks (every log2(p) steps mixes everyone's gradients)."""
    group = _chorus_group(state)
    future = group._gossip(bucket.buffer(), False, 0).get_future()
    return future.then(lambda fut: fut.value()[0])
