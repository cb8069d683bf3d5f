#!/usr/bin/python3
"""chorus_trace: merges the flight recorder dumps of the ranks of a Chorus
communicator (CHORUS_TRACE_FILE, chorusCommDumpTrace) and says where it hangs.

    chorus_trace /tmp/trace.*.jsonl
    chorus_trace --verdict-only dumps/

Prints, per communicator: each rank's last completed and last started
collective, the ranks that are behind and by how much, which rank is stuck in
which call, for how long and for which peer, mismatched shapes for one
sequence number, and a one-line verdict. See docs/debugging.md.
"""

import argparse
import json
import os
import sys

ACTIVE = ("queued", "running", "failed")


def load(path):
    """(header, entries) of one dump; raises ValueError on a malformed file."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    if not lines:
        raise ValueError(f"{path}: empty file")
    header = json.loads(lines[0])
    if header.get("chorus_trace") != 1:
        raise ValueError(f"{path}: not a chorus flight recorder dump")
    entries = [json.loads(line) for line in lines[1:]]
    return header, entries


def expand(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if os.path.isfile(full):
                    yield full
        else:
            yield path


def ranks_text(ranks):
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ",".join(str(r) for r in ranks)


def shape(entry):
    if entry["kind"] != "coll":
        return f'{entry["call"]}(count={entry["count"]}, {entry["dtype"]}, peer {entry["peer"]})'
    extra = f', root {entry["root"]}' if entry.get("root", -1) >= 0 else ""
    op = f', {entry["op"]}' if entry["call"] in ("AllReduce", "Reduce", "ReduceScatter") else ""
    return f'{entry["call"]}(count={entry["count"]}, {entry["dtype"]}{op}{extra})'


def seconds(ns):
    return f"{ns / 1e9:.3f} s"


def peers_text(entry):
    parts = []
    data_from = sorted(entry.get("waiting_for_data_from", []))
    take = sorted(entry.get("waiting_for_peer_to_take", []))
    if data_from:
        parts.append("data from " + ("peer " if len(data_from) == 1 else "peers ") + ",".join(map(str, data_from)))
    if take:
        parts.append(("peer " if len(take) == 1 else "peers ") + ",".join(map(str, take)) + " to take data")
    return " and ".join(parts)


class Communicator:
    def __init__(self, comm_hash):
        self.comm_hash = comm_hash
        self.dumps = {}  # rank -> (header, entries, path)
        self.nranks = 0

    def add(self, header, entries, path):
        rank = header["rank"]
        self.nranks = max(self.nranks, header["nranks"])
        previous = self.dumps.get(rank)
        # Several dumps of one rank (an error, then an abort): the latest wins.
        if previous is None or header["steady_anchor_ns"] >= previous[0]["steady_anchor_ns"]:
            self.dumps[rank] = (header, entries, path)

    def collectives(self, rank):
        return [e for e in self.dumps[rank][1] if e["kind"] == "coll"]

    def analyse(self):
        """The report lines and the verdict."""
        lines = []
        ranks = sorted(self.dumps)
        missing = [r for r in range(self.nranks) if r not in self.dumps]
        lines.append(f"communicator {self.comm_hash}: {self.nranks} rank{'s' if self.nranks != 1 else ''}, dumps from {','.join(map(str, ranks))}"
                     + (f"; no dump from {ranks_text(missing)}" if missing else ""))
        completed, started, by_seq = {}, {}, {}
        for rank in ranks:
            colls = self.collectives(rank)
            completed[rank] = max([e["seq"] for e in colls if e["state"] == "done"], default=0)
            started[rank] = max([e["seq"] for e in colls], default=0)
            for entry in colls:
                by_seq.setdefault(entry["seq"], {})[rank] = entry
        for rank in ranks:
            header = self.dumps[rank][0]
            lines.append(f"rank {rank} ({header['host']} pid {header['pid']}, dumped on {header['reason']}): "
                         f"last completed #{completed[rank]}, last started #{started[rank]}"
                         + (f", {header['waiting_turn']} launch(es) queued behind" if header.get("waiting_turn") else ""))

        top = max(started.values(), default=0)
        behind = {r: top - started[r] for r in ranks if started[r] < top}
        for rank, gap in sorted(behind.items()):
            lines.append(f"behind: rank {rank} by {gap} call(s) (last started #{started[rank]}, others reached #{top})")

        stuck = {}
        for rank in ranks:
            header, entries, _ = self.dumps[rank]
            active = [e for e in entries if e["state"] in ACTIVE]
            if not active:
                continue
            entry = active[-1] if not [e for e in active if e["state"] == "failed"] else \
                [e for e in active if e["state"] == "failed"][0]
            begun = entry["started_ns"] or entry["enqueued_ns"]
            end = entry["finished_ns"] if entry["state"] == "failed" else header["steady_anchor_ns"]
            stuck[rank] = entry
            what = peers_text(entry)
            verb = "failed after" if entry["state"] == "failed" else f"{entry['state']} for"
            path = f", path {entry['path']}" if entry.get("path") else ""
            lines.append(f"stuck: rank {rank} in {entry['call']} #{entry['seq']} {shape(entry)}{path}: "
                         f"{verb} {seconds(max(0, end - begun))}"
                         + (f", waiting for {what}" if what else "")
                         + (f" ({entry['error']})" if entry.get("error") else ""))

        mismatches = {}
        for seq in sorted(by_seq):
            shapes = {}
            for rank, entry in by_seq[seq].items():
                shapes.setdefault(shape(entry), []).append(rank)
            if len(shapes) > 1:
                described = "; ".join(f"{ranks_text(rs)} called {s}" for s, rs in sorted(shapes.items(),
                                                                                       key=lambda kv: min(kv[1])))
                mismatches[seq] = described
                lines.append(f"mismatch at #{seq}: {described}")

        lines.append("verdict: " + self.verdict(top, behind, stuck, by_seq, mismatches, ranks))
        return lines

    def verdict(self, top, behind, stuck, by_seq, mismatches, ranks):
        if mismatches:
            seq = min(mismatches)
            return f"ranks disagree on call #{seq}: {mismatches[seq]}"
        if top == 0 and not stuck:
            return "no collective recorded"
        name = next(iter(by_seq[top].values()))["call"] if top in by_seq else "call"
        waiters = sorted(r for r, e in stuck.items() if e["kind"] == "coll" and e["seq"] == top)
        if behind:
            text = f"{ranks_text(behind)} never entered {name} #{top}"
            if waiters:
                peers = set()
                for rank in waiters:
                    peers.update(stuck[rank].get("waiting_for_data_from", []))
                culprits = sorted(peers & set(behind)) or sorted(peers)
                text += f"; {ranks_text(waiters)} wait" + ("s" if len(waiters) == 1 else "") + " in it"
                if culprits:
                    text += " for data from " + ("peer " if len(culprits) == 1 else "peers ") + \
                        ",".join(map(str, culprits))
            return text
        if stuck:
            rank = min(stuck)
            entry = stuck[rank]
            what = peers_text(entry)
            return (f"every rank entered {name} #{top}; {ranks_text(sorted(stuck))} did not finish it"
                    + (f" (rank {rank} waits for {what})" if what else ""))
        return f"no rank is stuck: every rank completed #{top}"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dumps", nargs="+", help="dump files or directories holding them")
    parser.add_argument("--verdict-only", action="store_true", help="print only the verdict line(s)")
    args = parser.parse_args(argv)
    comms = {}
    for path in expand(args.dumps):
        try:
            header, entries = load(path)
        except (OSError, ValueError) as error:
            print(f"chorus_trace: skipping {path}: {error}", file=sys.stderr)
            continue
        comms.setdefault(header["comm"], Communicator(header["comm"])).add(header, entries, path)
    if not comms:
        print("chorus_trace: no flight recorder dumps found", file=sys.stderr)
        return 2
    for index, comm in enumerate(sorted(comms.values(), key=lambda c: c.comm_hash)):
        lines = comm.analyse()
        if args.verdict_only:
            lines = [line for line in lines if line.startswith("verdict: ")]
        if index:
            print()
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
