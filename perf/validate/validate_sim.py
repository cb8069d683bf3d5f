#!/usr/bin/env python3
"""Measured allreduce on the emulated cluster against chorus_sim's prediction.

For every (hosts, algorithm, size) it runs all_reduce_perf on
perf/cluster/cluster.sh (one rank per network namespace, tbf-limited links)
and chorus_sim on a model of the same cluster, and prints one table with the
error of the prediction, the measured-fastest algorithm per (hosts, size),
the algorithm the simulator and the closed forms (cost_model.h, what the
tuner uses) call fastest, and what the tuner picked by itself (no -A).

The model is calibrated once, before any cell, on 2 hosts, and never fitted
per cell:
  alpha  per-step latency: an 8-byte ring allreduce on 2 hosts takes 2 steps
  beta   1 / bandwidth: a 64 MiB sendrecv on 2 hosts (TCP/IP on the tbf rate)
  gamma  the reduction rate the communicator measured locally at creation
         (CHORUS_DEBUG=INFO TUNE line), else 1e-10 s/B
  host CPU per cross-host byte and end: the CPU time (user + system of the
         ranks, plus the machine's softirq time: the kernel's TCP and veth
         work) that 4 more 64 MiB sendrecvs on 2 hosts cost, over twice the
         bytes they move. The emulated hosts share this machine's cores
         (--physical-cores, default os.cpu_count()), so chorus_sim stretches
         calls whose CPU work outruns them (src/model/shared_cores.h);
         --physical-cores 0 models a core per host.

  sudo perf/validate/validate_sim.py --build build [--hosts 2,4,8]
      [--algos ring,tree,hd,ps] [--sizes 1M,64M] [--rate 1gbit] [--json out.json]
      [--physical-cores N] [--fanin-probe] [--socket-rcvbuf BYTES] [--tcp-cc NAME]

--socket-rcvbuf exports CHORUS_SOCKET_RCVBUF=BYTES (e.g. 1M) to every rank of
every run, calibration included (default: unset, the kernel autotunes).
--tcp-cc sets the emulated hosts' TCP congestion control (default: the
machine's). The reference sweep uses --socket-rcvbuf 1M --tcp-cc reno: BBR's
pacing misjudges the emulated links (docs/algorithms.md, "hd at 8 hosts, 1 MiB").

--fanin-probe first checks the emulated network alone at every host count:
perf/cluster/fanin_probe.py --reverse --pipeline (plain sockets, no Chorus;
hosts-1 senders into rank 0, chunk c sent back once all sent it), printed as
its time against the fluid bound (hosts-1) x 64 MiB / bandwidth. Near 1 means
the port shares fairly among readers that keep up, as the model assumes
(docs/algorithms.md, "Fan-in on the emulated cluster").

Needs root (cluster.sh); exits 77 without it. Every run has a timeout and the
whole sweep a budget (--budget, seconds): cells past it are reported "skipped".
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
DEFAULT_GAMMA = 1e-10


def parse_size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * scale[text[-1].upper()] if text[-1].upper() in scale else int(text)


def size_label(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def fmt_time(seconds):
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


class Runner:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.deadline = time.monotonic() + args.budget
        self.serial = 0

    def cluster_cpu(self, *args, **kwargs):
        """cluster() and the CPU seconds it cost: its ranks' user + system time
        (waited-for children) plus the machine's softirq time meanwhile."""
        before = cpu_seconds()
        result, output = self.cluster(*args, **kwargs)
        return result, output, cpu_seconds() - before

    def cluster(self, hosts, binary, flags, timeout_s, env_extra=None):
        """Runs one cluster job; returns (host 0 JSON result or None, output)."""
        if time.monotonic() + timeout_s > self.deadline:
            return None, "skipped: over the sweep budget"
        self.serial += 1
        json_path = os.path.join(self.workdir, f"run{self.serial}_{{rank}}.json")
        cmd = [self.args.cluster, "-n", str(hosts), "-r", self.args.rate, "-t", str(timeout_s), "--",
               os.path.join(self.args.build, "perf", binary), *flags, "-T", str(timeout_s), "-J", json_path]
        env = dict(os.environ)
        if self.args.socket_rcvbuf is not None:
            env["CHORUS_SOCKET_RCVBUF"] = self.args.socket_rcvbuf  # cluster.sh passes the environment on
        if self.args.tcp_cc:  # cluster.sh sets CLUSTER_SYSCTLS in every host's namespace
            setting = f"net.ipv4.tcp_congestion_control={self.args.tcp_cc}"
            env["CLUSTER_SYSCTLS"] = " ".join(filter(None, [env.get("CLUSTER_SYSCTLS", ""), setting]))
        env.update(env_extra or {})
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=timeout_s + 30)
            output = proc.stdout
        except subprocess.TimeoutExpired as e:
            return None, f"timeout after {timeout_s + 30} s\n{e.stdout or ''}"
        result_file = json_path.replace("{rank}", "0")
        if proc.returncode != 0 or not os.path.exists(result_file):
            return None, f"exit {proc.returncode}\n{output}"
        with open(result_file) as f:
            report = json.load(f)
        return report["results"][0], output

    def sim(self, hosts, nbytes, model):
        """chorus_sim --algo all on `hosts` hosts: {algo: (sim_s, analytic_s or None)}."""
        cmd = [os.path.join(self.args.build, "perf", "sim", "chorus_sim"), "--coll", "allreduce", "--algo", "all",
               "--bytes", str(nbytes), "--ranks", str(hosts), "--ranks-per-host", "1",
               "--bw", f"{model['bandwidth_Bps'] / 1e6:.6f}MB", "--latency", f"{model['alpha_s'] * 1e6:.3f}us",
               "--gamma", f"{model['gamma_s_per_byte']:.4g}", "--chunk", self.args.chunk,
               "--physical-cores", str(model["physical_cores"]),
               "--host-cpu", f"{model['host_cpu_s_per_byte']:.4g}"]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                             check=True).stdout
        rows = {}
        number = r"([\d.]+) (ns|us|ms|s)"
        for line in out.splitlines():
            m = re.match(rf"\s*(\d+)\s+(\S+)\s+{number}\s+(?:{number}|-)\s", line)
            if m:
                sim_s = float(m.group(3)) * SIM_UNITS[m.group(4)]
                analytic = float(m.group(5)) * SIM_UNITS[m.group(6)] if m.group(5) else None
                rows[m.group(2)] = (sim_s, analytic)
        return rows


def cpu_seconds():
    """User + system time of the waited-for children, plus the machine's softirq time."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open("/proc/stat") as f:
        fields = f.readline().split()  # cpu user nice system idle iowait irq softirq ...
    softirq = (int(fields[6]) + int(fields[7])) / os.sysconf("SC_CLK_TCK")
    return children.ru_utime + children.ru_stime + softirq


def calibrate(runner):
    """alpha, beta, gamma and the host CPU cost from runs on 2 hosts, once for the sweep."""
    small, out = runner.cluster(2, "all_reduce_perf", ["-b", "8", "-e", "8", "-n", "100", "-w", "10", "-A", "ring"],
                                60, {"CHORUS_DEBUG": "INFO", "CHORUS_DEBUG_SUBSYS": "TUNE"})
    if small is None:
        sys.exit(f"calibration (8-byte ring allreduce) failed: {out}")
    alpha = small["out_of_place"]["time_us"] * 1e-6 / 2  # 2 dependent steps at p = 2
    gamma = DEFAULT_GAMMA
    m = re.search(r"\[host0\].*measured alpha .* reduction ([\d.e+-]+) GB/s", out)
    if m and float(m.group(1)) > 0:
        gamma = 1e-9 / float(m.group(1))
    large_bytes = 64 << 20
    large, out, large_cpu = runner.cluster_cpu(2, "sendrecv_perf", ["-b", str(large_bytes), "-e", str(large_bytes),
                                                                     "-n", "5", "-w", "1"], 120)
    if large is None:
        sys.exit(f"calibration (64 MiB sendrecv) failed: {out}")
    transfer_s = large["out_of_place"]["time_us"] * 1e-6 - alpha
    # The same job with 4 fewer iterations of each (out-of-place and in-place)
    # sendrecv: the difference is 8 calls of 2 x 64 MiB across hosts, with the
    # start-up, connection and tuner probes cancelled out.
    short, out, short_cpu = runner.cluster_cpu(2, "sendrecv_perf", ["-b", str(large_bytes), "-e", str(large_bytes),
                                                                     "-n", "1", "-w", "1"], 90)
    if short is None:
        sys.exit(f"calibration (64 MiB sendrecv, short) failed: {out}")
    moved = 2 * 4 * 2 * large_bytes
    host_cpu = max(0.0, (large_cpu - short_cpu) / (2 * moved))  # two ends per byte
    return {"alpha_s": alpha, "bandwidth_Bps": large_bytes / transfer_s, "gamma_s_per_byte": gamma,
            "small_allreduce_us": small["out_of_place"]["time_us"],
            "sendrecv_64MiB_us": large["out_of_place"]["time_us"],
            "host_cpu_s_per_byte": host_cpu, "cpu_probe_s": [large_cpu, short_cpu],
            "physical_cores": runner.args.physical_cores}


def fanin_probe(runner, hosts, model):
    """Plain-socket gather-then-broadcast into rank 0: (seconds, seconds / fluid bound) or None."""
    nbytes = 64 << 20
    probe = os.path.join(REPO, "perf", "cluster", "fanin_probe.py")
    cmd = [runner.args.cluster, "-n", str(hosts), "-r", runner.args.rate, "-t", "120", "--", sys.executable, probe,
           "--bytes", str(nbytes), "--reverse", "--pipeline"]
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=150).stdout
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"\[host0\] fanin .* all_s=([\d.]+)", out)
    if not m:
        return None
    seconds = float(m.group(1))
    return seconds, seconds / ((hosts - 1) * nbytes / model["bandwidth_Bps"])


def iterations(hosts, algo, nbytes):
    """(-n, -w): a few iterations for large messages, where one takes up to seconds."""
    if nbytes < (8 << 20):
        return 20, 3
    if algo == "ps" and hosts >= 8:
        return 1, 1
    return 2, 1


def run_cell_timeout(hosts, nbytes, iters, warmup):
    # Generous: 2 x (out-of-place + in-place) x iterations of a central PS at 1 Gbit/s, plus setup.
    worst_s = 2 * (hosts - 1) * nbytes / 110e6
    return int(min(300, 30 + 2 * (iters + warmup) * worst_s))


def tuner_pick(output, nbytes):
    m = re.search(rf"\[host0\].*TUNE rank 0 allreduce {nbytes} B on \d+ ranks: (\S+),", output)
    return m.group(1) if m else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--hosts", default="2,4,8")
    parser.add_argument("--algos", default="ring,tree,hd,ps")
    parser.add_argument("--sizes", default="1M,64M")
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--cluster", default=os.path.join(REPO, "perf", "cluster", "cluster.sh"),
                        help="the emulated-cluster launcher (cluster.sh's interface)")
    parser.add_argument("--chunk", default="512K", help="must match CHORUS_CHUNK_BYTES (default 512K)")
    parser.add_argument("--budget", type=int, default=900, help="seconds for the whole sweep")
    parser.add_argument("--json", help="also write every cell here")
    parser.add_argument("--fanin-probe", action="store_true",
                        help="first measure the network alone at each host count (perf/cluster/fanin_probe.py)")
    parser.add_argument("--physical-cores", type=int, default=os.cpu_count() or 0,
                        help="cores the emulated hosts share (default: this machine's; 0: a core per host)")
    parser.add_argument("--socket-rcvbuf", metavar="BYTES",
                        help="export CHORUS_SOCKET_RCVBUF=BYTES to every rank (default: unset, kernel autotuning)")
    parser.add_argument("--tcp-cc", metavar="NAME",
                        help="TCP congestion control inside the emulated hosts, e.g. reno (default: the machine's); "
                             "docs/algorithms.md, 'hd at 8 hosts, 1 MiB'")
    args = parser.parse_args()
    if args.socket_rcvbuf is not None and not re.fullmatch(r"\d+[KkMmGg]?[Bb]?", args.socket_rcvbuf):
        parser.error(f"--socket-rcvbuf: '{args.socket_rcvbuf}' is not a size (bytes, K/M/G suffixes)")
    if args.tcp_cc is not None and not re.fullmatch(r"[a-z0-9_]+", args.tcp_cc):
        parser.error(f"--tcp-cc: '{args.tcp_cc}' is not a congestion control name (e.g. reno, bbr)")
    if os.geteuid() != 0:
        print("validate_sim: needs root for perf/cluster/cluster.sh; skipping", file=sys.stderr)
        return 77
    hosts_list = [int(h) for h in args.hosts.split(",")]
    algos = args.algos.split(",")
    sizes = [parse_size(s) for s in args.sizes.split(",")]

    with tempfile.TemporaryDirectory(prefix="chorus-validate-") as workdir:
        runner = Runner(args, workdir)
        model = calibrate(runner)
        print(f"# calibrated once on 2 hosts at {args.rate}: alpha {model['alpha_s'] * 1e6:.1f} us per step "
              f"(8 B ring allreduce {model['small_allreduce_us']:.1f} us / 2), bandwidth "
              f"{model['bandwidth_Bps'] / 1e6:.1f} MB/s (64 MiB sendrecv {model['sendrecv_64MiB_us'] / 1e3:.1f} ms), "
              f"gamma {model['gamma_s_per_byte']:.3g} s/B, chunk {args.chunk}; host CPU "
              f"{model['host_cpu_s_per_byte'] * 1e9:.3f} ns per cross-host byte and end (CPU "
              f"{model['cpu_probe_s'][0]:.2f} s - {model['cpu_probe_s'][1]:.2f} s for 8 x 2 x 64 MiB), "
              f"{model['physical_cores']} physical cores shared"
              + (f", CHORUS_SOCKET_RCVBUF={args.socket_rcvbuf}" if args.socket_rcvbuf is not None else "")
              + (f", TCP congestion control {args.tcp_cc}" if args.tcp_cc else ""),
              flush=True)
        if args.fanin_probe:
            for hosts in hosts_list:
                if hosts < 2:
                    continue
                probe = fanin_probe(runner, hosts, model)
                model.setdefault("fanin_probe", {})[hosts] = probe
                print(f"# network alone, {hosts - 1} senders into one port (fanin_probe.py --reverse --pipeline, "
                      f"64 MiB each): " + (f"{probe[0]:.3f} s, {probe[1]:.3f} x the fluid bound" if probe else
                                           "failed"), flush=True)
        cells, summaries = [], []
        for hosts in hosts_list:
            for nbytes in sizes:
                predicted = runner.sim(hosts, nbytes, model)
                measured = {}
                for algo in algos:
                    iters, warmup = iterations(hosts, algo, nbytes)
                    flags = ["-b", str(nbytes), "-e", str(nbytes), "-n", str(iters), "-w", str(warmup), "-A", algo]
                    result, out = runner.cluster(hosts, "all_reduce_perf", flags,
                                                 run_cell_timeout(hosts, nbytes, iters, warmup))
                    sim_s, analytic_s = predicted.get(algo, (None, None))
                    cell = {"hosts": hosts, "algo": algo, "bytes": nbytes, "iters": iters, "predicted_s": sim_s,
                            "analytic_s": analytic_s, "measured_s": None, "error_pct": None}
                    if result is None or result["out_of_place"]["wrong"] != 0:
                        cell["failure"] = out.strip().splitlines()[-3:] if out else "no output"
                    else:
                        cell["measured_s"] = result["out_of_place"]["time_us"] * 1e-6
                        cell["in_place_s"] = result["in_place"]["time_us"] * 1e-6
                        # The same schedule twice: a large gap means the shared machine interfered.
                        cell["noisy"] = abs(cell["in_place_s"] - cell["measured_s"]) > 0.2 * cell["measured_s"]
                        measured[algo] = cell["measured_s"]
                        if sim_s:
                            cell["error_pct"] = 100 * (cell["measured_s"] - sim_s) / sim_s
                    cells.append(cell)
                    print(f"#   {hosts} hosts {algo:<5} {size_label(nbytes):>7}: measured {fmt_time(cell['measured_s'])}"
                          f", predicted {fmt_time(sim_s)}" + (f" ({cell['failure']})" if "failure" in cell else ""),
                          flush=True)
                # The tuner on its own (no -A): its pick and what that pick measures.
                iters, warmup = iterations(hosts, "ring", nbytes)
                auto, out = runner.cluster(hosts, "all_reduce_perf",
                                           ["-b", str(nbytes), "-e", str(nbytes), "-n", str(iters), "-w", str(warmup)],
                                           run_cell_timeout(hosts, nbytes, iters, warmup),
                                           {"CHORUS_DEBUG": "INFO", "CHORUS_DEBUG_SUBSYS": "TUNE"})
                candidates = {a: predicted[a] for a in algos if a in predicted}
                summary = {
                    "hosts": hosts, "bytes": nbytes,
                    "measured_fastest": min(measured, key=measured.get) if measured else None,
                    "sim_fastest": min(candidates, key=lambda a: candidates[a][0]) if candidates else None,
                    "model_fastest": min((a for a in candidates if candidates[a][1] is not None),
                                         key=lambda a: candidates[a][1], default=None),
                    "tuner_pick": tuner_pick(out, nbytes) if auto else None,
                    "tuner_measured_s": auto["out_of_place"]["time_us"] * 1e-6 if auto else None,
                }
                best = measured.get(summary["measured_fastest"])
                if best and summary["tuner_measured_s"]:
                    summary["tuner_vs_fastest_pct"] = 100 * (summary["tuner_measured_s"] - best) / best
                summaries.append(summary)

        print()
        print(f"| hosts | algo | bytes | measured | predicted (sim) | error % | closed form |")
        print(f"| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
        for c in cells:
            err = f"{c['error_pct']:+.1f}" if c["error_pct"] is not None else "-"
            mark = "" if c["error_pct"] is None or abs(c["error_pct"]) <= 25 else " **"
            mark += " (noisy)" if c.get("noisy") else ""
            print(f"| {c['hosts']} | {c['algo']} | {size_label(c['bytes'])} | {fmt_time(c['measured_s'])} | "
                  f"{fmt_time(c['predicted_s'])} | {err}{mark} | {fmt_time(c['analytic_s'])} |")
        print()
        print("| hosts | bytes | measured fastest | sim fastest | closed-form fastest | tuner pick | "
              "tuner measured | vs fastest |")
        print("| ---: | ---: | --- | --- | --- | --- | ---: | ---: |")
        for s in summaries:
            vs = f"{s['tuner_vs_fastest_pct']:+.1f} %" if "tuner_vs_fastest_pct" in s else "-"
            print(f"| {s['hosts']} | {size_label(s['bytes'])} | {s['measured_fastest']} | {s['sim_fastest']} | "
                  f"{s['model_fastest']} | {s['tuner_pick']} | {fmt_time(s['tuner_measured_s'])} | {vs} |")
        within = [c for c in cells if c["error_pct"] is not None and abs(c["error_pct"]) <= 25]
        print(f"\n# {len(within)} of {len(cells)} cells within 25 % of the simulator")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"model": model, "cells": cells, "summaries": summaries,
                           "socket_rcvbuf": args.socket_rcvbuf}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
