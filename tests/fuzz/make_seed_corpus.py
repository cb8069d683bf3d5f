#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into corpus/<target>/ (a few
valid and a few broken inputs each). Inputs of targets that read their
parameters with FuzzedDataProvider end with those parameters, encoded as
the provider reads them (integers from the end of the input)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


class Tail:
    """Integers as FuzzedDataProvider consumes them, from the input's end."""

    def __init__(self):
        self.consumed = []

    def integral(self, value, low, high):
        span = high - low
        count = 0
        while count < 8 and (span >> (8 * count)) > 0:
            count += 1
        result = value - low
        self.consumed += [(result >> (8 * (count - 1 - j))) & 0xFF for j in range(count)]
        return self

    def boolean(self, value):
        return self.integral(1 if value else 0, 0, 255)

    def bytes(self):
        return bytes(reversed(self.consumed))


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def peer_info(host, tcp, shm, numa=b"-1"):
    # core/peer_info.cc: host, NUMA node (decimal), then (transport, address) pairs.
    pairs = [(b"tcp", tcp)] + ([(b"shm", shm)] if shm else [])
    out = b"CHPI3" + u32(len(host)) + host + u32(len(numa)) + numa + u32(len(pairs))
    for name, address in pairs:
        out += u32(len(name)) + name + u32(len(address)) + address
    return out


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main():
    secret = bytes(range(16))
    # unique_id: 16-byte secret + root address (sealed), or a raw id.
    write("unique_id", "valid_v4", secret + b"127.0.0.1:29500")
    write("unique_id", "valid_v6", secret + b"[::1]:29500")
    write("unique_id", "valid_name", secret + b"node-17.cluster:1")
    write("unique_id", "bad_port", secret + b"127.0.0.1:65536")
    write("unique_id", "v6_no_brackets", secret + b"::1:29500")
    write("unique_id", "raw_bad_checksum", b"CHID\x01\x0f\x00\x00" + secret + b"127.0.0.1:29500".ljust(96, b"\0") + bytes(8))

    # rendezvous: rank count - 1, then a request, a reply header or a table.
    blob0 = peer_info(b"host-a:boot:ns", b"10.0.0.1:4000", b"shm1 100 1048576 /chorus-shm-x-0-100-ab host-a:boot:ns", b"0")
    blob1 = peer_info(b"host-b:boot:ns", b"10.0.0.2:4000", b"")
    write("rendezvous", "table_2", b"\x01" + u32(len(blob0)) + blob0 + u32(len(blob1)) + blob1)
    write("rendezvous", "table_1_empty_blob", b"\x00" + u32(0))
    write("rendezvous", "request", b"\x01" + u32(0x5A445652) + u32(1) + u32(2) + u32(len(blob1)) + blob1)
    write("rendezvous", "reply_error", b"\x01" + u32(3) + u64(5) + b"error")
    write("rendezvous", "table_truncated", b"\x01" + u32(len(blob0)) + blob0[:-3])
    write("rendezvous", "blob_too_long", b"\x01" + u32(0x10001) + b"x" * 16)
    write("rendezvous", "peer_info_trailing", b"\x00" + blob1 + b"!")

    # shrink: body, then hello rank (i32), own rank, old nranks.
    def shrink(body, nranks=4, own=0, hello=1):
        tail = Tail().integral(nranks, 1, 64).integral(own, 0, nranks - 1).integral(hello & 0xFFFFFFFF, 0, 2**32 - 1)
        return body + tail.bytes()

    table = secret + u32(3) + u32(0) + u32(2) + u32(3) + u32(14) + b"10.0.0.3:40000"
    write("shrink", "table", shrink(table))
    write("shrink", "membership", shrink(u32(2) + u32(1) + u32(3)))
    write("shrink", "join_request", shrink(b"SHRK" + u32(1) + u32(4)))
    write("shrink", "reply_left_out", shrink(u32(0x5446454C) + u64(12) + u32(2) + u32(0) + u32(2)))
    write("shrink", "membership_unsorted", shrink(u32(2) + u32(3) + u32(1)))
    write("shrink", "join_wrong_nranks", shrink(b"SHRK" + u32(1) + u32(5)))
    write("shrink", "reply_huge_body", shrink(u32(0) + u64(1 << 40)))

    # tcp_wire: lane mode (stream, then the posted receives) or handshake.
    def lane(stream, receives):
        tail = Tail().boolean(False).integral(len(receives), 1, 4)
        for tag, size in receives:
            tail.integral(tag, 0, 3).integral(size, 0, 4096)
        return stream + tail.bytes()

    def header(tag, size, magic=0x4D524843):
        return u32(magic) + u32(0) + u64(tag) + u64(size)

    write("tcp_wire", "two_messages", lane(header(1, 5) + b"hello" + header(2, 0), [(1, 5), (2, 0)]))
    write("tcp_wire", "large", lane(header(3, 3000) + bytes(3000), [(3, 3000)]))
    write("tcp_wire", "bad_magic", lane(header(1, 5, magic=0x12345678) + b"hello", [(1, 5)]))
    write("tcp_wire", "tag_mismatch", lane(header(2, 5) + b"hello", [(1, 5)]))
    write("tcp_wire", "truncated", lane(header(1, 100) + b"short", [(1, 100)]))
    hello = u32(0x43485253) + struct.pack("<HH", 1, 2) + u32(3) + u32(1)
    for name, sealed in (("handshake_sealed", True), ("handshake_raw", False)):
        tail = Tail().boolean(True).boolean(sealed).boolean(False)
        write("tcp_wire", name, secret + bytes(16) + hello + bytes(32) + tail.bytes())

    # acceptor: hello, nonce, MAC (48 bytes), the request, then "sealed".
    def connector(hello_bytes, request, sealed=True):
        return hello_bytes + bytes(16) + bytes(16) + request + Tail().boolean(sealed).bytes()

    rendezvous_hello = u32(0x43485253) + struct.pack("<HH", 1, 1) + u32(1) + u32(0)
    request = u32(0x5A445652) + u32(1) + u32(2) + u32(len(blob1)) + blob1
    write("acceptor", "request", connector(rendezvous_hello, request))
    write("acceptor", "request_empty_blob", connector(rendezvous_hello, u32(0x5A445652) + u32(1) + u32(2) + u32(0)))
    write("acceptor", "wrong_mac", connector(rendezvous_hello, request, sealed=False))
    write("acceptor", "lane_purpose", connector(hello, request))
    write("acceptor", "truncated_request", connector(rendezvous_hello, request[:-4]))
    write("acceptor", "blob_too_long", connector(rendezvous_hello, u32(0x5A445652) + u32(1) + u32(2) + u32(1 << 20)))

    # shm: address text, segment header, or ring records.
    def address(text, nranks=4):
        return text + Tail().integral(0, 0, 2).integral(nranks, 1, 1 << 20).bytes()

    write("shm", "address", address(b"shm1 1234 1048576 /chorus-shm-0a1b-2-1234-ff host:boot:ns"))
    write("shm", "address_bad_prefix", address(b"shm1 1234 1048576 /other host"))
    write("shm", "address_huge_ring", address(b"shm1 1234 18446744073709551552 /chorus-shm-a host", nranks=3))
    seg = struct.pack("<QIIiiQQQ", 0x3153484353524F43, 4, 2, 1, 2, 4096, 0, 0) + bytes(16) + bytes(16)
    header_tail = Tail().integral(1, 0, 2).boolean(True).integral(2, 1, 8).integral(1, 0, 8).integral(2, 1, 4)
    write("shm", "header_sealed", secret + seg + header_tail.bytes())

    def record(kind, chunk, tag, message, source=0):
        return (u32(kind) + u32(chunk) + u64(tag) + u64(message) + u64(source)).ljust(64, b"\0")

    def ring(records, receives, head, cma=False):
        tail = Tail().integral(2, 0, 2).boolean(cma).integral(len(receives), 1, 4)
        for tag, size, combine in receives:
            tail.integral(tag, 0, 3).integral(size, 0, 3 * 4096).boolean(combine)
        tail.boolean(False).integral(head // 64, 0, 128)
        return records + tail.bytes()

    payload = bytes(range(100)).ljust(128, b"\0")
    eager = record(1, 100, 1, 100) + payload
    write("shm", "ring_eager", ring(eager, [(1, 100, False)], len(eager)))
    write("shm", "ring_eager_combined", ring(eager, [(1, 100, True)], len(eager)))
    two = record(1, 64, 2, 164) + bytes(64) + record(2, 100, 0, 0) + payload
    write("shm", "ring_two_records", ring(two, [(2, 164, True)], len(two)))
    write("shm", "ring_skip", ring(record(4, 0, 0, 0), [(1, 8, False)], 64))
    write("shm", "ring_pull_cannot", ring(record(3, 0, 1, 70000, 4096), [(1, 70000 % 12289, False)], 64))
    write("shm", "ring_bad_head", ring(eager, [(1, 100, False)], 96))
    write("shm", "ring_oversized_chunk", ring(record(1, 70000, 1, 100), [(1, 100, False)], 64))

    for name, text in (("ring", "ring"), ("per_collective", "allreduce:hd;broadcast:chain"),
                       ("spaces_case", " AllReduce : Oneshot ; reduce:tree "), ("auto", "auto"),
                       ("unknown_algo", "allreduce:foo"), ("unknown_collective", "sendrecv:ring"),
                       ("empty_entries", ";;:;")):
        write("algo_spec", name, text.encode())
    for name, text in (("full", "alpha_us=20 bandwidth_GBps=1.2 gamma_GBps=8"),
                       ("all_keys", "alpha_us=2\nbandwidth_GBps=10\noverhead_us=1 intra_alpha_us=0.5 intra_bandwidth_GBps=20 "
                                   "cached_gamma_GBps=30"),
                       ("negative", "alpha_us=-1 bandwidth_GBps=1"), ("missing_bandwidth", "alpha_us=3"),
                       ("no_equals", "alpha_us"), ("unknown_key", "alpha_us=1 bandwidth_GBps=1 speed=3"),
                       ("huge", "alpha_us=1e308 bandwidth_GBps=1e-308")):
        write("tune_file", name, text.encode())
    for name, text in (("kilo", "512K"), ("giga_b", "1GB"), ("zero", "0"), ("auto", "auto"),
                       ("ring_min", "256K"), ("secret", "00112233445566778899aabbccddeeff"),
                       ("negative", "-1"), ("overflow", "99999999999999999999"), ("too_large", "17179869184G"),
                       ("suffix", "1X"), ("space", " 5")):
        write("size", name, text.encode())
    for name, text in (("prefixes", "eth,ib"), ("exclude", "^lo,docker"), ("exact", "=eth0"),
                       ("exclude_exact", "^=eth0"), ("empty", ""), ("commas", ",,,"), ("caret_only", "^"),
                       ("no_match", "wlan")):
        write("ifname", name, text.encode())

    # call_check: peers' lies (XORed onto our summaries, then onto our call
    # entries), then ranks, our rank, the calls (collective, type, op, count,
    # root, avg, premulsum) and whether a send joins the launch.
    def calls(nranks, rank, ops, send=False):
        tail = Tail().integral(nranks, 2, 9).integral(rank, 0, nranks - 1).integral(len(ops), 1, 4)
        for coll, dtype, op, count, root, avg in ops:
            tail.integral(coll, 0, 7).integral(dtype, 0, 9).integral(op, 0, 3).integral(count, 0, 2**32 - 1)
            tail.integral(root, 0, nranks - 1).boolean(avg)
            if not avg:
                tail.boolean(False)
        tail.boolean(send)
        if send:
            tail.integral(0, 0, len(ops))
        return tail.bytes()

    def lie(at, value, size=64):
        return bytes(at) + bytes([value]) + bytes(size - at - 1)

    one = [(0, 7, 0, 1024, 0, False)]
    group = [(0, 7, 0, 1024, 0, False), (1, 1, 0, 8, 1, False), (4, 9, 2, 64, 0, True)]
    write("call_check", "agree", calls(2, 0, one))
    write("call_check", "count_differs", lie(32, 1) + calls(2, 1, one))
    write("call_check", "bad_magic", lie(0, 0xFF) + calls(3, 2, one))
    write("call_check", "group_agree", calls(4, 1, group, send=True))
    write("call_check", "group_second_differs", lie(16, 1) + lie(17, 2, 48) + calls(2, 0, group))
    write("call_check", "group_shorter", lie(4, 3) + lie(32, 0xFE, 48) + calls(2, 0, group))


if __name__ == "__main__":
    main()
