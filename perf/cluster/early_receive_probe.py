#!/usr/bin/env python3
"""hd allreduce traffic with early allgather receives, plain TCP: no Chorus.

exchange_probe.py reads hd's messages one step at a time. Chorus's executor
does not: an allgather receive depends only on its destination being free, so
it is posted at the start of the call and the executor reads a partner's data
as soon as it arrives, even while this rank still waits for the previous
step's partner. This probe replays hd's messages (recursive halving, then
doubling; two lanes per peer, message k to a peer on lane k % lanes, messages
of --chunk bytes) with either receive order, so the network alone shows what
the early reads cost:

  --receives step   read step s+1 only after step s (as exchange_probe.py)
  --receives early  read every allgather step as soon as its data arrives
                    (after the reduce-scatter step with the same partner,
                    which shares its lanes), as the executor posts them

The reduce-scatter receives stay in step order in both modes: in Chorus each
one reduces into the previous one's result. --rcvbuf sets SO_RCVBUF on every
socket before connect/listen, as CHORUS_SOCKET_RCVBUF does. Rank 0 prints the
mean time per call over --calls after --warmup calls.

  CHORUS_SOCKET_RCVBUF= perf/cluster/cluster.sh -n 8 -- \\
      perf/cluster/early_receive_probe.py --bytes 64M --rcvbuf 1M --receives early

Exits non-zero on any socket error; every socket and wait has a timeout.
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exchange_probe as xp  # noqa: E402  (same directory)

TIMEOUT_S = xp.TIMEOUT_S


def wait(event, what):
    if not event.wait(TIMEOUT_S):
        raise TimeoutError(f"early_receive_probe: timed out waiting for {what}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=xp.parse_size, default=64 << 20)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--chunk", type=xp.parse_size, default=512 << 10, help="bytes per message (default 512K)")
    parser.add_argument("--rcvbuf", type=xp.parse_size, default=0, help="SO_RCVBUF (default 0: autotuned)")
    parser.add_argument("--receives", choices=["step", "early"], default="early")
    args = parser.parse_args()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if size < 2 or size & (size - 1):
        sys.exit("early_receive_probe: needs a power-of-two number of hosts >= 2")
    conns = xp.connect_mesh(rank, size, args.lanes, rcvbuf=args.rcvbuf)
    steps = xp.steps_of("hd", rank, size, args.bytes)  # reduce-scatter steps, then allgather in reverse
    levels = len(steps) // 2
    payload = bytearray(min(args.chunk, args.bytes))
    received = [0] * size
    errors = []

    def read_step(peer, nbytes, inbox):
        for piece in xp.pieces(nbytes, args.chunk):
            xp.recv_exact(conns[peer][received[peer] % args.lanes], piece, inbox)
            received[peer] += 1

    sender = xp.LaneSender(conns, args.lanes, args.chunk, payload)

    def reader(level, go_rs, rs_done, go_ag, ag_done):
        """Reduce-scatter step `level`, then its partner's allgather step."""
        peer, _, rs_bytes = steps[level]
        inbox = bytearray(min(args.chunk, args.bytes))
        try:
            wait(go_rs, "its reduce-scatter turn")
            read_step(peer, rs_bytes, inbox)
            rs_done.set()
            wait(go_ag, "its allgather turn")
            read_step(peer, steps[2 * levels - 1 - level][2], inbox)
        except (OSError, TimeoutError) as error:
            errors.append(error)
        rs_done.set()
        ag_done.set()

    def check():
        if errors:
            raise errors[0]

    start = None
    for call in range(args.warmup + args.calls):
        if call == args.warmup:
            start = time.monotonic()
        events = [[threading.Event() for _ in range(4)] for _ in range(levels)]
        if args.receives == "early":
            for level in range(levels):
                events[level][2] = events[level][1]  # allgather read right after the reduce-scatter one
        readers = [threading.Thread(target=reader, args=(level, *events[level]), daemon=True) for level in range(levels)]
        for thread in readers:
            thread.start()
        for index, (to, _, nbytes) in enumerate(steps):
            level = index if index < levels else 2 * levels - 1 - index
            go_rs, rs_done, go_ag, ag_done = events[level]
            sender.put(to, nbytes)
            if index < levels:
                go_rs.set()
                wait(rs_done, f"step {index}")
            else:
                go_ag.set()
                wait(ag_done, f"step {index}")
            sender.done()
            check()
        for thread in readers:
            thread.join(TIMEOUT_S)
        check()
    elapsed = time.monotonic() - start
    sender.stop()
    if rank == 0:
        print(f"early_receive_probe hd hosts {size} bytes {args.bytes} chunk {args.chunk} lanes {args.lanes} "
              f"rcvbuf {args.rcvbuf} receives {args.receives}: {elapsed / args.calls * 1e3:.2f} ms per call "
              f"over {args.calls} calls")


if __name__ == "__main__":
    main()
