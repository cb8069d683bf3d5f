#!/usr/bin/env python3
"""Network-only fan-in probe for perf/cluster/cluster.sh: no Chorus involved.

Ranks 1..k (k = --senders, default all) each open one TCP connection to rank 0
and send --bytes; rank 0 reads every connection at once (one thread each, large
recv_into, so the reader is never the bottleneck). With --reverse, rank 0 also
sends --bytes to each sender over the same connections at the same time (as a
tree root does while it broadcasts the previous chunks down). Rank 0 prints the
time from the first connection's start to the last byte and the goodput into
it, plus the per-flow finish times; with --sample it also samples eth0's rx/tx
byte counters every 10 ms and prints the rate per 100 ms.

  perf/cluster/cluster.sh -n 3 -- perf/cluster/fanin_probe.py --bytes 64M [--reverse]

Exits non-zero on any socket error; every socket has a timeout.
"""
import argparse
import os
import socket
import sys
import threading
import time

PORT = 29500
TIMEOUT_S = 60


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exchange_probe import parse_size, recv_exact  # noqa: E402  (same directory)


def send_all(conn, nbytes, buf):
    view, left = memoryview(buf), nbytes
    while left > 0:
        left -= conn.send(view[:min(left, len(buf))])


def counters():
    base = "/sys/class/net/eth0/statistics/"
    with open(base + "rx_bytes") as rx, open(base + "tx_bytes") as tx:
        return int(rx.read()), int(tx.read())


def root(args, senders):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", PORT))
    listener.listen(senders)
    listener.settimeout(TIMEOUT_S)
    conns = []
    for _ in range(senders):
        conn, _ = listener.accept()
        conn.settimeout(TIMEOUT_S)
        conns.append(conn)
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((time.monotonic(), *counters()))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample) if args.sample else None
    finish, errors = [None] * senders, []
    arrived, ready = [0] * senders, threading.Condition()  # bytes in per flow (--pipeline)

    def send_pipelined(conn):
        buf, sent = bytearray(args.chunk), 0
        while sent < args.bytes:
            length = min(args.chunk, args.bytes - sent)
            with ready:
                if not ready.wait_for(lambda: min(arrived) >= sent + length, timeout=TIMEOUT_S):
                    raise TimeoutError("pipeline stalled")
            send_all(conn, length, buf)
            sent += length

    def recv_counted(i, buf):
        view, left = memoryview(buf), args.bytes
        while left > 0:
            got = conns[i].recv_into(view[:min(left, len(buf))])
            if got == 0:
                raise ConnectionError("peer closed early")
            left -= got
            with ready:
                arrived[i] += got
                ready.notify_all()

    def serve(i):
        try:
            buf = bytearray(4 << 20)
            sender = None
            if args.reverse:
                target, targs = ((send_pipelined, (conns[i],)) if args.pipeline else
                                 (send_all, (conns[i], args.bytes, bytearray(4 << 20))))
                sender = threading.Thread(target=target, args=targs)
                sender.start()
            recv_counted(i, buf)
            finish[i] = time.monotonic()
            if sender:
                sender.join()
        except Exception as e:  # reported below, exit status 1
            errors.append(f"flow {i}: {e}")

    for conn in conns:
        conn.sendall(b"g")  # go: every sender starts at once
    start = time.monotonic()
    if sampler:
        sampler.start()
    threads = [threading.Thread(target=serve, args=(i,)) for i in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = time.monotonic()  # with --reverse: every byte both ways
    stop.set()
    if sampler:
        sampler.join()
    if errors:
        sys.exit("fanin_probe: " + "; ".join(errors))
    end = max(finish)
    total = senders * args.bytes
    print(f"fanin senders={senders} bytes={args.bytes} reverse={int(args.reverse)} pipeline={int(args.pipeline)} time_s={end - start:.4f} "
          f"goodput_MBps={total / (end - start) / 1e6:.1f} all_s={done - start:.4f} flows_s="
          + ",".join(f"{f - start:.3f}" for f in finish), flush=True)
    if samples:
        t0, rx0, tx0 = samples[0]
        step = 10
        for j in range(step, len(samples), step):
            t1, rx1, tx1 = samples[j]
            ta, rxa, txa = samples[j - step]
            print(f"  t={t1 - t0:6.2f}s rx {(rx1 - rxa) / (t1 - ta) / 1e6:6.1f} MB/s tx {(tx1 - txa) / (t1 - ta) / 1e6:6.1f} MB/s")


def sender(args, rank):
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            conn = socket.create_connection((args.root, PORT), timeout=TIMEOUT_S)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    recv_exact(conn, 1, bytearray(1))
    receiver = None
    if args.reverse:
        receiver = threading.Thread(target=recv_exact, args=(conn, args.bytes, bytearray(4 << 20)))
        receiver.start()
    send_all(conn, args.bytes, bytearray(4 << 20))
    if receiver:
        receiver.join()
    conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=parse_size, default=64 << 20)
    parser.add_argument("--senders", type=int, default=0, help="ranks 1..k send (default: all)")
    parser.add_argument("--reverse", action="store_true", help="rank 0 sends --bytes back to each at once")
    parser.add_argument("--pipeline", action="store_true", help="with --reverse: chunk c goes back once all sent it")
    parser.add_argument("--chunk", type=parse_size, default=512 << 10)
    parser.add_argument("--sample", action="store_true", help="print rank 0's eth0 rates per 100 ms")
    parser.add_argument("--root", default="10.213.0.1")
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    senders = args.senders or world - 1
    if rank == 0:
        root(args, senders)
    elif rank <= senders:
        sender(args, rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
