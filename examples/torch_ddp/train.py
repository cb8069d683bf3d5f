"""Data-parallel training of a small CNN (LeNet) on Fashion-MNIST with
torch.nn.parallel.DistributedDataParallel, on the CPU.

The backend is the only thing that changes between runs:

    # torchrun (Debian's torch is under /usr/bin/python3; --redirects/--tee:
    # torch 1.13's torchrun fails on Python 3.11 without them, see README.md)
    PYTHONPATH=build/python /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        --redirects 9:0 --tee 9:0 examples/torch_ddp/train.py --backend chorus
    # or let the script start its own processes
    PYTHONPATH=build/python /usr/bin/python3 examples/torch_ddp/train.py --nproc 2 --backend gloo

The data are the IDX files of Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist, gzip or plain), read with numpy.

Rank 0 ends with one machine-readable line:

    DDP_RESULT backend=chorus nproc=2 batch_per_rank=64 steps=468 timed_steps=448 \\
        images_per_s=2164.3 train_s=26.50 loss=0.3839 test_accuracy=85.23

images_per_s counts the timed training steps only (after --warmup-steps):
all ranks' images over the wall-clock time of the slowest rank, from a
barrier before the first timed step to a barrier after the last. loss is the
mean training loss of the last 50 steps over all ranks; test_accuracy (%) is
measured on the 10,000 test images after training.
"""
import argparse
import gc
import gzip
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.286, 0.353  # Fashion-MNIST's pixel statistics (after /255)
LOSS_WINDOW = 50


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="gloo", help="gloo or chorus (default gloo)")
    p.add_argument("--nproc", type=int, default=0,
                   help="start N local processes (without it: one process per rank from torchrun's environment)")
    p.add_argument("--epochs", type=int, default=1, help="epochs (default 1)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps in all (default: no limit)")
    p.add_argument("--warmup-steps", type=int, default=20, help="untimed steps at the start (default 20)")
    p.add_argument("--batch", type=int, default=64, help="images per rank per step (default 64)")
    p.add_argument("--lr", type=float, default=0.02, help="SGD learning rate (default 0.02)")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP bucket_cap_mb (default 25, DDP's)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the shuffle (default 0)")
    p.add_argument("--data", default=DATA_DIR, help=f"directory of the IDX files (default {DATA_DIR})")
    return p.parse_args(argv)


# ---------------------------------------------------------------- data

def read_idx(path):
    """An IDX file (gzip or plain) as a numpy array of unsigned bytes."""
    for candidate in (path, path + ".gz", path[:-3] if path.endswith(".gz") else None):
        if candidate and os.path.exists(candidate):
            path = candidate
            break
    else:
        sys.exit(f"train.py: {path} not found (Debian package dataset-fashion-mnist)")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype_code, ndim = raw[0] << 8 | raw[1], raw[2], raw[3]
    if zero != 0 or dtype_code != 0x08:
        sys.exit(f"train.py: {path} is not an unsigned-byte IDX file")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        sys.exit(f"train.py: {path} holds {data.size} bytes of data, its header says {shape}")
    return data.reshape(shape)


def load(data_dir, split):
    """(images N x 1 x 28 x 28 float32 normalised, labels N int64) of 'train' or 't10k'."""
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32)).div_(255.0).sub_(MEAN).div_(STD).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64))


# ---------------------------------------------------------------- model

class LeNet(nn.Module):
    """conv5x5 20 - relu - pool - conv5x5 50 - relu - pool - fc 500 - relu - fc 10 (431,080 parameters)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(50 * 4 * 4, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


# ---------------------------------------------------------------- training

def evaluate(model, images, labels, rank, world):
    """Test accuracy (%) over all ranks; rank r scores images r, r+world, ..."""
    model.eval()
    correct = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        x, y = images[rank::world], labels[rank::world]
        for i in range(0, len(x), 500):
            correct[0] += (model(x[i:i + 500]).argmax(1) == y[i:i + 500]).sum().item()
        correct[1] = len(x)
    dist.all_reduce(correct)
    model.train()
    return 100.0 * correct[0].item() / correct[1].item()


def train(args, rank, world):
    """Trains and evaluates; returns rank 0's DDP_RESULT line (None elsewhere)."""
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")

    torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    model = DDP(LeNet(), bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    sampler = DistributedSampler(train_x, num_replicas=world, rank=rank, shuffle=True, seed=args.seed,
                                 drop_last=True)
    steps_per_epoch = len(sampler) // args.batch
    total = args.epochs * steps_per_epoch
    if args.max_steps > 0:
        total = min(total, args.max_steps)
    warmup = min(args.warmup_steps, max(total - 1, 0))

    losses = []
    step = 0
    start = None
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        order = torch.tensor(list(sampler))
        for b in range(steps_per_epoch):
            if step == total:
                break
            if step == warmup:
                dist.barrier()
                start = time.perf_counter()
            index = order[b * args.batch:(b + 1) * args.batch]
            x, y = train_x[index], train_y[index]
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
            losses.append(loss.item())
            step += 1
    dist.barrier()
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    timed = step - warmup
    images_per_s = timed * args.batch * world / elapsed.item()

    mean_loss = torch.tensor([sum(losses[-LOSS_WINDOW:]) / max(len(losses[-LOSS_WINDOW:]), 1)],
                             dtype=torch.float64)
    dist.all_reduce(mean_loss)
    accuracy = evaluate(model.module, test_x, test_y, rank, world)
    if rank != 0:
        return None
    return (f"DDP_RESULT backend={args.backend} nproc={world} batch_per_rank={args.batch} steps={step} "
            f"timed_steps={timed} images_per_s={images_per_s:.1f} train_s={elapsed.item():.2f} "
            f"loss={mean_loss.item() / world:.4f} test_accuracy={accuracy:.2f}")


def register_chorus():
    try:
        import torch_chorus  # noqa: F401  registers the "chorus" backend
    except ImportError as error:
        sys.exit(f"train.py: --backend chorus needs torch_chorus ({error}): build Chorus "
                 "(ninja -C build) and put build/python on PYTHONPATH")


def run(args, rank, world):
    torch.set_num_threads(args.threads)
    if args.backend == "chorus":
        register_chorus()
    dist.init_process_group(args.backend, init_method="env://", rank=rank, world_size=world)
    line = train(args, rank, world)
    # The DDP model (and its reducer) died with train()'s locals while the
    # process group was still registered, so the group is torn down here and
    # not by the reducer at exit: with torch 1.13 the latter can deadlock
    # (~ProcessGroupGloo joins a worker that waits for the GIL).
    gc.collect()
    dist.destroy_process_group()
    if line:
        print(line, flush=True)


def spawned(rank, args, world):
    os.environ["RANK"], os.environ["LOCAL_RANK"] = str(rank), str(rank)
    run(args, rank, world)


def main():
    args = parse_args()
    if args.backend not in ("gloo", "chorus"):
        sys.exit(f"train.py: --backend {args.backend}: gloo or chorus")
    # For the ranks spawned below (torchrun sets it itself): OpenBLAS sizes its
    # thread pool from it when torch loads, and set_num_threads does not shrink it.
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    if args.nproc > 0:
        if args.backend == "chorus":
            register_chorus()  # fail here once rather than in every rank
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(args.nproc))
        torch.multiprocessing.spawn(spawned, args=(args, args.nproc), nprocs=args.nproc)
    elif "WORLD_SIZE" in os.environ:
        run(args, int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        sys.exit("train.py: run under torchrun, or give --nproc N")


if __name__ == "__main__":
    main()
