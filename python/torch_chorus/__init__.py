"""Chorus as a torch.distributed backend.

    import torch_chorus                      # registers the backend "chorus"
    torch.distributed.init_process_group("chorus", ...)

Rendezvous goes through the store torch.distributed hands to the backend
(env://, tcp://, file://, torchrun), so no extra port or variable is needed.
The timeout given to init_process_group becomes the deadline of every Chorus
wait. Choose an algorithm for every call of a group with
``pg_options=torch_chorus.Options(algo="ring")`` or CHORUS_ALGO.
"""
from dataclasses import dataclass
from typing import Optional

import torch.distributed as dist

from ._C import ProcessGroupChorus  # noqa: F401  (the base class must load first)
from . import hooks  # noqa: F401

BACKEND_NAME = "chorus"


@dataclass
class Options:
    """Per-group options, passed as ``pg_options`` to init_process_group or new_group."""

    algo: Optional[str] = None  # like CHORUS_ALGO: ring, tree, hd, dbtree, ...


def _create(backend_options, pg_options):
    algo = ""
    if pg_options is not None:
        if not isinstance(pg_options, Options):
            raise TypeError(f"chorus: pg_options must be torch_chorus.Options, got {type(pg_options).__name__}")
        algo = pg_options.algo or ""
    return ProcessGroupChorus(backend_options.store, backend_options.group_rank, backend_options.group_size,
                              backend_options.timeout, algo)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True)
