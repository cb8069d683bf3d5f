#!/usr/bin/env python3
"""Network-only allreduce traffic probe for perf/cluster/cluster.sh: no Chorus.

Replays the messages of a Chorus allreduce with plain TCP sockets, one rank per
host, to tell the network (emulated links, the kernel's TCP) from Chorus:

  hd:   recursive halving then doubling (p a power of two): at each step send
        n/2, n/4, ... to partner rank ^ mask and receive as much from it at the
        same time; the next step starts once this one's receive is complete.
  ring: 2(p-1) steps; send n/p to rank+1 while receiving n/p from rank-1.

As in the TCP transport, every peer pair has --lanes connections and the k-th
message to a peer goes on lane k % lanes. --chunk cuts every step into messages
of at most that many bytes, as the executor does (CHORUS_CHUNK_BYTES, 512 KiB by
default: every step of a 1 MiB allreduce is then one message); they are read in
order, each from its lane. --cc sets
TCP_CONGESTION on every socket (as root any available one, e.g. cubic).
Rank 0 prints the mean time per call over --calls after --warmup calls.

  perf/cluster/cluster.sh -n 8 -- perf/cluster/exchange_probe.py --pattern hd --bytes 1M

Exits non-zero on any socket error; every socket has a timeout.
"""
import argparse
import os
import queue
import socket
import struct
import sys
import threading
import time

PORT = 29600
TIMEOUT_S = 60


def parse_size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * scale[text[-1].upper()] if text[-1].upper() in scale else int(text)


def address(rank):
    return f"10.213.0.{rank + 1}"  # cluster.sh gives host h the address 10.213.0.(h+1)


def recv_exact(conn, nbytes, buf):
    view, left = memoryview(buf), nbytes
    while left > 0:
        got = conn.recv_into(view[:min(left, len(buf))])
        if got == 0:
            raise ConnectionError("peer closed early")
        left -= got


def new_socket(rcvbuf=0):
    """A TCP socket with a timeout; SO_RCVBUF (if any) set before connect/listen, as Chorus does."""
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(TIMEOUT_S)
    return sock


def configure(conn, cc):
    conn.settimeout(TIMEOUT_S)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if cc:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())


def connect_mesh(rank, size, lanes, cc="", rcvbuf=0):
    """conns[peer][lane]; the lower rank connects, the higher one accepts."""
    conns = [[None] * lanes for _ in range(size)]
    listener = new_socket(rcvbuf)  # accepted sockets inherit its SO_RCVBUF
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", PORT))
    listener.listen(size * lanes)
    for peer in range(rank + 1, size):
        for lane in range(lanes):
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                conn = new_socket(rcvbuf)
                try:
                    conn.connect((address(peer), PORT))
                    break
                except OSError:
                    conn.close()
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            conn.sendall(struct.pack("<ii", rank, lane))
            configure(conn, cc)
            conns[peer][lane] = conn
    for _ in range(rank * lanes):
        conn, _ = listener.accept()
        conn.settimeout(TIMEOUT_S)
        hello = bytearray(8)
        recv_exact(conn, 8, hello)
        peer, lane = struct.unpack("<ii", hello)
        configure(conn, cc)
        conns[peer][lane] = conn
    listener.close()
    return conns


def pieces(nbytes, chunk):
    """Message sizes of a step cut into chunks, as the executor cuts it."""
    return [min(chunk, nbytes - offset) for offset in range(0, nbytes, chunk)]


class LaneSender:
    """One thread that sends each job's bytes in chunks, the k-th message to a peer on lane k % lanes,
    so that a step's send overlaps its receive. put() queues a job; done() waits for the oldest one."""

    def __init__(self, conns, lanes, chunk, payload):
        self.conns, self.lanes, self.chunk, self.payload = conns, lanes, chunk, payload
        self.sent = [0] * len(conns)
        self.errors = []
        self.jobs, self.finished = queue.Queue(), queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            to, nbytes = job
            try:
                for piece in pieces(nbytes, self.chunk):
                    self.conns[to][self.sent[to] % self.lanes].sendall(memoryview(self.payload)[:piece])
                    self.sent[to] += 1
            except OSError as error:
                self.errors.append(error)
            self.finished.put(True)

    def put(self, to, nbytes):
        self.jobs.put((to, nbytes))

    def done(self):
        self.finished.get(timeout=TIMEOUT_S)
        if self.errors:
            raise self.errors[0]

    def stop(self):
        self.jobs.put(None)
        self.thread.join(TIMEOUT_S)


def steps_of(pattern, rank, size, nbytes):
    """(send_to, recv_from, bytes) per step of one call."""
    if pattern == "ring":
        return [((rank + 1) % size, (rank - 1) % size, nbytes // size)] * (2 * (size - 1))
    masks, sizes, mask, part = [], [], size // 2, nbytes // 2
    while mask >= 1:
        masks.append(mask)
        sizes.append(part)
        mask, part = mask // 2, part // 2
    halving = [(rank ^ m, rank ^ m, b) for m, b in zip(masks, sizes)]
    return halving + halving[::-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pattern", choices=["hd", "ring"], default="hd")
    parser.add_argument("--bytes", type=parse_size, default=1 << 20)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--chunk", type=parse_size, default=512 << 10, help="bytes per message (default 512K)")
    parser.add_argument("--cc", default="", help="TCP_CONGESTION for every socket (default: the host's)")
    args = parser.parse_args()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.pattern == "hd" and size & (size - 1):
        sys.exit("exchange_probe: --pattern hd needs a power-of-two number of hosts")
    conns = connect_mesh(rank, size, args.lanes, args.cc)
    steps = steps_of(args.pattern, rank, size, args.bytes)
    largest = min(args.chunk, max(b for _, _, b in steps))
    payload, inbox = bytearray(largest), bytearray(largest)
    received = [0] * size
    sender = LaneSender(conns, args.lanes, args.chunk, payload)
    start = None
    for call in range(args.warmup + args.calls):
        if call == args.warmup:
            start = time.monotonic()
        for to, frm, nbytes in steps:
            sender.put(to, nbytes)
            for piece in pieces(nbytes, args.chunk):
                recv_exact(conns[frm][received[frm] % args.lanes], piece, inbox)
                received[frm] += 1
            sender.done()
    elapsed = time.monotonic() - start
    sender.stop()
    if rank == 0:
        cc = args.cc or open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
        print(f"exchange_probe {args.pattern} hosts {size} bytes {args.bytes} chunk {args.chunk} lanes {args.lanes} cc {cc}: "
              f"{elapsed / args.calls * 1e3:.2f} ms per call over {args.calls} calls")


if __name__ == "__main__":
    main()
