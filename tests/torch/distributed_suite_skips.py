"""What distributed_suite.py needs to know about backends and tests, in one
place: the feature sets a third-party backend joins, the tests that fail for
every backend here, and the tests PyTorch's suite runs only for gloo (or
gloo and NCCL), by the backend's name."""

# DistTestCases.backend_feature sets a third-party backend joins besides
# "plugin" (not "gpu" or "cuda": Chorus has no GPU support yet).
FEATURES = {
    "chorus": ["ddp", "subgroup"],
}

# Debian's torch 1.13 on Python 3.11: the suite's harness enables DDP with
# ReplicatedTensor (TestDistBackend._run), so every DistributedDataParallel
# built on the CPU imports torch.distributed._shard, whose sharded_tensor
# metadata dataclass has a TensorProperties() default that Python 3.11
# rejects (ValueError: mutable default ... use default_factory). Measured:
# these fail for gloo and chorus alike, at world sizes 2 and 3.
_REPLICATED_TENSOR = ("fails for every backend: DDP under the suite's harness imports torch.distributed._shard, "
                      "whose TensorProperties dataclass default Python 3.11 rejects (torch 1.13)")
FAIL_EVERYWHERE = {name: _REPLICATED_TENSOR for name in [
    "test_DistributedDataParallelCPU",
    "test_DistributedDataParallelCPU_grad_is_view",
    "test_accumulate_gradients_no_sync",
    "test_accumulate_gradients_no_sync_allreduce_hook",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook",
    "test_accumulate_gradients_no_sync_grad_is_view",
    "test_ddp_create_graph",
    "test_ddp_logging_data_cpu",
    "test_static_graph_api_cpu",
]}


def _gated(reason, names):
    return {name: f"the suite runs it only for gloo ({reason})" for name in names}


# Tests that pass for gloo on this machine but that the suite's own
# decorators run only for named backends; any other backend skips them
# there, before a process starts. Listed so that the reference comparison
# knows these skips are expected, and with the suite's reason.
GLOO_ONLY = {
    **_gated("@require_backend({'gloo'}): all_reduce_coalesced", [
        f"test_all_reduce_coalesced{group}_{op}"
        for group in ("", "_group", "_full_group") for op in ("sum", "max", "min", "product")]),
    **_gated("'Only gloo backend supports timeouts'", [
        "test_barrier_timeout_global", "test_barrier_timeout_group", "test_barrier_timeout_full_group"]),
    **_gated("'GLOO Batch Send Recv CPU'", ["test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags"]),
    **_gated("@require_backend(backend_feature['gpu']), that is nccl and gloo: object collectives", [
        "test_all_gather_object_default_pg", "test_all_gather_object_subgroup", "test_broadcast_object_list",
        "test_gather_object", "test_gather_object_subgroup"]),
    **_gated("@require_backend({'gloo'}): scatter_object_list", ["test_scatter_object_list"]),
    **_gated("'get_future is only supported on mpi, nccl and gloo'", ["test_get_future"]),
    **_gated("@require_backend({'gloo'}); torch.distributed.monitored_barrier accepts only gloo groups", [
        "test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
        "test_monitored_barrier_gloo_rank_0_timeout", "test_monitored_barrier_failure_order",
        "test_monitored_barrier_wait_all_ranks"]),
    **_gated("'Only Gloo backend support sparse all reduce'", ["test_sparse_all_reduce_sum"]),
}


# With their gate lifted (distributed_suite.py --lift-gloo-gates), the
# GLOO_ONLY tests a backend still cannot pass, and why.
LIFTED_GAPS = {
    "chorus": {
        **{name: "torch 1.13's torch.distributed.monitored_barrier raises for every group but gloo's before it "
                 "reaches the backend (ProcessGroup.monitored_barrier, which test_monitored_barrier_gloo_rank_0_timeout "
                 "calls, reaches chorus's)" for name in [
            "test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
            "test_monitored_barrier_failure_order", "test_monitored_barrier_wait_all_ranks"]},
        "test_sparse_all_reduce_sum": "chorus reduces dense tensors only (no sparse allreduce)",
    },
}


def skip_reason(name, backend, world_size, lifted=False):
    """Why distributed_suite.py skips `name` for `backend` (with gloo's gates
    lifted or not), or None."""
    del world_size  # the same lists hold at world sizes 2 and 3
    if lifted:
        return LIFTED_GAPS.get(backend, {}).get(name)
    if name in FAIL_EVERYWHERE:
        return FAIL_EVERYWHERE[name]
    if backend != "gloo" and name in GLOO_ONLY:
        return GLOO_ONLY[name]
    return None
