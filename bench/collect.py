#!/usr/bin/env python3
"""What a collected run costs: the same load against one nginx on loopback, run by `crest run`
and by `crest collect` with FEW and MORE `crest worker`s (default 2 and 4), in interleaved
rounds of one run. Every count crest reports is held to nginx's own (its stub_status counter,
read before and after each run). Prints the merged throughput of MORE workers over FEW, of the
collected runs over the plain run, the collector's CPU-seconds and peak memory per worker (the
difference between MORE and FEW, over MORE - FEW), and from them an estimate for 100 workers.
Called by collect.sh."""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import GEN_CORE, NGINX_CORE, PORT, PRIORITY  # noqa: E402

TOKEN = "crest-bench-collect"
# What one run may take beyond its duration (start, the grace for requests in flight, writing
# the run directory) before it is killed and the benchmark fails.
SLACK_S = 90
INTERVAL_LINE = re.compile(r"^\s*\d+s\s+\d+ requests\s+\d+ failed")


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(prefix, status_port):
    """bench/run.sh's nginx, with stub_status on a second port so its own count can be read."""
    status = f"server {{ listen 127.0.0.1:{status_port}; location = /status {{ stub_status; }} }}"
    return compare.start_nginx(prefix, compare.nginx_conf(prefix, http_extra=[status]))


def served(status_port):
    """nginx's count of requests so far (stub_status's third figure), this read included."""
    with urllib.request.urlopen(f"http://127.0.0.1:{status_port}/status", timeout=5) as r:
        return int(r.read().decode().splitlines()[2].split()[2])


def proc_cpu_mem(pid):
    """(CPU-seconds so far, VmRSS KiB, VmHWM KiB) of a running process: the time on a CPU of
    each of its threads (schedstat, in ns; a tick of /proc/PID/stat is 10 ms, as long as the
    collector's whole cost per worker in a short run)."""
    ns = 0
    for stat in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            ns += int(open(stat).read().split()[0])
        except (OSError, IndexError):
            pass
    rss = hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return ns / 1e9, rss, hwm


class Timed:
    """A process pinned to `core`; at its exit, its wall time, CPU-seconds (user + system, from
    wait4's rusage, in microseconds: GNU time prints hundredths) and peak RSS (from GNU time: a
    process forked from this Python would count Python's memory as its own)."""

    def __init__(self, cmd, core=GEN_CORE, env=None, stderr_pipe=False):
        self.timefile = tempfile.NamedTemporaryFile("r", suffix=".time")
        self.out = tempfile.TemporaryFile("w+")
        self.err = None if stderr_pipe else tempfile.TemporaryFile("w+")
        self.cmd = cmd
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            PRIORITY + ["taskset", "-c", core, "/usr/bin/time", "-f", "%M", "-o", self.timefile.name] + cmd,
            stdout=self.out, stderr=subprocess.PIPE if stderr_pipe else self.err, text=True,
            env={**os.environ, **(env or {})})

    def child_pid(self, timeout=10):
        """crest's own pid: GNU time's child (nice and taskset exec, keeping the Popen's pid)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                kids = open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()
                if kids:
                    return int(kids[0])
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError(f"{' '.join(self.cmd[:2])}: no process under GNU time")

    def finish(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            # The rusage of GNU time, which includes crest's, the child it waited for.
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                os.wait4(self.proc.pid, 0)
                self.proc.returncode = -9
                raise RuntimeError(f"{' '.join(self.cmd[:2])} ran past its time and was killed")
            time.sleep(0.02)
        wall = time.monotonic() - self.t0
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.out.seek(0)
        stdout = self.out.read()
        stderr = ""
        if self.err:
            self.err.seek(0)
            stderr = self.err.read()
        if self.proc.returncode != 0:
            raise RuntimeError(f"{' '.join(self.cmd[:2])} failed ({self.proc.returncode}): {stderr[-800:]}")
        rss = int(self.timefile.read().split()[-1])
        return stdout, stderr, wall, usage.ru_utime + usage.ru_stime, rss


def load_args(a, rate):
    """The load flags of every variant: the same plan whoever runs it."""
    args = ["-d", f"{a.seconds}s", "--threads", "1"]
    return args + (["--rate", str(rate)] if rate else ["-c", str(a.users)])


def run_plain(a, url, rate, out):
    t = Timed([a.crest, "run", url] + load_args(a, rate) + ["--quiet", "--summary-json", "-", "--out", out])
    stdout, _, _, cpu, rss = t.finish(a.seconds + SLACK_S)
    s = json.loads(stdout)
    return {"summary": s, "gen_cpu_s": cpu, "gen_rss_mib": [rss / 1024]}


def journal_bytes(path):
    """Bytes of a journal by its lines' kind (each line is one entry, the stream's own lines)."""
    kinds = {}
    with open(path) as f:
        for line in f:
            kind = json.loads(line).get("entry", "?")
            kinds[kind] = kinds.get(kind, 0) + len(line)
    return kinds


def run_collected(a, url, rate, workers, out, seconds=None, merge=False):
    """`crest collect` and its workers; the collector's CPU and memory are read from /proc at
    each merged second it prints (so that what the stream cost is known apart from writing the
    run directory at the end) and from wait4 at its exit."""
    secs = seconds or a.seconds
    load = load_args(a, rate)
    load[1] = f"{secs}s"
    env = {"CREST_TOKEN": TOKEN}
    col = Timed([a.crest, "collect", url] + load + ["--workers", str(workers), "--listen", "127.0.0.1:0",
                                                    "--summary-json", "-", "--out", os.path.join(out, "run")],
                env=env, stderr_pipe=True)
    addr, lines, samples = None, [], []
    deadline = time.time() + 30
    while addr is None:
        line = col.proc.stderr.readline()
        if not line or time.time() > deadline:
            col.proc.kill()
            raise RuntimeError("the collector did not listen: " + "".join(lines))
        lines.append(line)
        m = re.match(r"collector: waiting for \d+ workers on (\S+)", line)
        addr = m and m.group(1)
    pid = col.child_pid()

    def drain():
        # One sample per merged second judged: the last is the collector's cost up to the end
        # of the stream, before it writes the run directory.
        for line in col.proc.stderr:
            lines.append(line)
            if INTERVAL_LINE.match(line):
                try:
                    cpu_s, rss_kib, hwm_kib = proc_cpu_mem(pid)
                except OSError:
                    continue
                # An exited collector (a zombie until reaped) has no memory left to read.
                if hwm_kib:
                    samples.append((len(samples), cpu_s, rss_kib, hwm_kib))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    parts = [os.path.join(out, f"w{i}") for i in range(workers)]
    ws = [Timed([a.crest, "worker", "--collector", addr, "--out", parts[i]],
                env={**env, "JOB_COMPLETION_INDEX": str(i)}) for i in range(workers)]
    try:
        done = [w.finish(secs + SLACK_S) for w in ws]
        stdout, _, wall, cpu, rss = col.finish(secs + SLACK_S)
    except RuntimeError as e:
        for p in [col] + ws:
            if p.proc.returncode is None:
                p.proc.kill()
        reader.join(timeout=5)
        raise RuntimeError(f"{e}; the collector said: {''.join(lines)[-1500:]}") from None
    reader.join(timeout=5)
    s = json.loads(stdout)
    with open(os.path.join(out, "run", "results.json")) as f:
        r = json.load(f)
    _, stream_cpu, _, stream_hwm = samples[-1] if samples else (0, float("nan"), 0, 0)
    # How fast the collector's CPU and memory grew over the second half of the stream, past
    # the first requests' points (a fixed amount per worker): its cost per interval entry.
    # Per merged second, not per wall-clock second: the last seconds may be printed at once.
    growth = cpu_rate = float("nan")
    if len(samples) >= 4:
        k0 = len(samples) // 2
        (_, c0, r0, _), (_, c1, r1, _) = samples[k0], samples[-1]
        seconds_between = (len(samples) - 1 - k0) * a.interval
        growth = (r1 - r0) / seconds_between / workers
        cpu_rate = (c1 - c0) / seconds_between / workers
    merged = None
    if merge:
        # The offline merge of the same parts (the same merge::whole, from disk): its work per
        # entry beside the collector's.
        m = Timed([a.crest, "merge"] + parts + ["--quiet", "--summary-json", "-", "--out", os.path.join(out, "merged")])
        mout, _, _, mcpu, mrss = m.finish(SLACK_S)
        merged = {"requests": json.loads(mout)["requests"], "cpu_s": mcpu, "rss_mib": mrss / 1024}
    return {
        "summary": s,
        "worker_requests": [w["requests"] for w in r["workers"]],
        "gen_cpu_s": sum(d[3] for d in done),
        "gen_rss_mib": [d[4] / 1024 for d in done],
        "collector_cpu_s": cpu,
        "collector_rss_mib": rss / 1024,
        "collector_stream_cpu_s": stream_cpu,
        "collector_stream_hwm_mib": stream_hwm / 1024,
        "collector_wall_s": wall,
        "merged_seconds": len(samples),
        "collector_growth_kib_per_worker_s": growth,
        "collector_cpu_ms_per_worker_s": cpu_rate * 1e3,
        "merge": merged,
        "part_journal_bytes": [journal_bytes(os.path.join(p, "journal.jsonl")) for p in parts],
    }


def measure(fn, status_port):
    before = served(status_port)
    r = fn()
    # The second read counts itself.
    r["server"] = served(status_port) - before - 1
    s = r["summary"]
    r["requests"] = s["requests"]
    r["rps"] = s["requests"] / s["duration_s"]
    r["per_cpu_s"] = s["requests"] / r["gen_cpu_s"] if r["gen_cpu_s"] > 0 else float("nan")
    return r


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crest", required=True)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=int, default=0, help="also the open model at this rate (0: closed model only)")
    ap.add_argument("--workers", type=int, nargs=2, default=[1, 2], metavar=("FEW", "MORE"),
                    help="the two numbers of workers collected; the collector's cost per worker is their difference")
    ap.add_argument("--long", type=int, default=0,
                    help="one more closed-model run of MORE workers this long, for memory against run length")
    a = ap.parse_args()
    # crest's interval, as the collector prints its merged seconds.
    a.interval = 1.0
    few, more = a.workers
    if not 0 < few < more:
        sys.exit("--workers FEW MORE: 0 < FEW < MORE")
    url = f"http://127.0.0.1:{PORT}/"
    print(f"load average at start: {loadavg()}", flush=True)

    def label(n):
        return f"{n} worker{'s' if n > 1 else ''}"

    models = [("closed", 0)] + ([("open", a.rate)] if a.rate else [])
    variants = [(model, name, rate, n) for model, rate in models
                for name, n in (("plain", 0), (label(few), few), (label(more), more))]
    samples = {(m, v): [] for m, v, _, _ in variants}
    status_port = free_port()
    prefix = tempfile.mkdtemp(prefix="crest-bench-nginx-")
    nginx = start_nginx(prefix, status_port)
    mismatches = []
    long_run = None
    try:
        # Warm-up: nginx's and the page cache's cold start.
        out = tempfile.mkdtemp(prefix="crest-bench-collect-")
        measure(lambda: run_plain(a, url, 0, out), status_port)
        shutil.rmtree(out, ignore_errors=True)
        for i in range(a.rounds):
            # Rotating which goes first, so that a trend over the minutes hits all alike.
            order = variants[i % len(variants):] + variants[:i % len(variants)]
            for model, name, rate, workers in order:
                out = tempfile.mkdtemp(prefix="crest-bench-collect-")
                try:
                    if workers:
                        r = measure(lambda: run_collected(a, url, rate, workers, out), status_port)
                    else:
                        r = measure(lambda: run_plain(a, url, rate, out), status_port)
                finally:
                    shutil.rmtree(out, ignore_errors=True)
                samples[(model, name)].append(r)
                same = r["requests"] == r["server"] and sum(r.get("worker_requests", [r["requests"]])) == r["requests"]
                if not same:
                    mismatches.append((i + 1, model, name, r["requests"], r["server"], r.get("worker_requests")))
                extra = ""
                if workers:
                    extra = (f"; collector {r['collector_cpu_s']:.3f} CPU-s ({r['collector_stream_cpu_s']:.3f} to the "
                             f"end of the stream), {r['collector_rss_mib']:.1f} MiB peak "
                             f"({r['collector_stream_hwm_mib']:.1f} to the end of the stream)")
                print(f"round {i + 1} {model:<6} {name:<9} {r['rps']:>9.0f} req/s {r['per_cpu_s']:>9.0f} req/CPU-s "
                      f"crest {r['requests']} server {r['server']}{'' if same else ' MISMATCH'}{extra}",
                      file=sys.stderr, flush=True)
        if a.long:
            out = tempfile.mkdtemp(prefix="crest-bench-collect-")
            try:
                long_run = measure(lambda: run_collected(a, url, 0, more, out, seconds=a.long, merge=True), status_port)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            if long_run["requests"] != long_run["server"] or long_run["merge"]["requests"] != long_run["requests"]:
                mismatches.append(("long", "closed", label(more), long_run["requests"], long_run["server"],
                                   long_run["worker_requests"]))
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)

    secs = a.seconds
    print(f"nginx (1 worker) on core {NGINX_CORE}; every crest process (the plain run, each worker and the "
          f"collector) on core {GEN_CORE}, --threads 1; {secs} s each; closed model {a.users} users"
          + (f", open model {a.rate}/s" if a.rate else "") + f"; {a.rounds} interleaved rounds, medians")
    print(f"{'model':<6} {'run':<9} {'req/s':>9} {'req/CPU-s':>10} {'crest=server':>12} {'gen. MiB':>9} "
          f"{'coll. CPU-s':>11} {'to stream end':>13} {'coll. MiB':>10} {'to stream end':>13}")
    for model, name, rate, workers in variants:
        runs = samples[(model, name)]
        ok = sum(r["requests"] == r["server"] for r in runs)
        row = (f"{model:<6} {name:<9} {med(r['rps'] for r in runs):>9.0f} {med(r['per_cpu_s'] for r in runs):>10.0f} "
               f"{f'{ok} of {len(runs)}':>12} {med(max(r['gen_rss_mib']) for r in runs):>9.1f}")
        if workers:
            row += (f" {med(r['collector_cpu_s'] for r in runs):>11.3f}"
                    f" {med(r['collector_stream_cpu_s'] for r in runs):>13.3f}"
                    f" {med(r['collector_rss_mib'] for r in runs):>10.1f}"
                    f" {med(r['collector_stream_hwm_mib'] for r in runs):>13.1f}")
        print(row)

    def ratio(xs, ys, k):
        """The median of the rounds' ratios: each measured in the same minutes."""
        return med(y[k] / x[k] for x, y in zip(xs, ys))

    for model, rate in models:
        p, c1, c2 = (samples[(model, n)] for n in ("plain", label(few), label(more)))
        print(f"{model}: merged req/s {label(more)} / {label(few)} {ratio(c1, c2, 'rps'):.3f}x "
              f"(req/CPU-s {ratio(c1, c2, 'per_cpu_s'):.3f}x); {label(few)} collected / plain run "
              f"{ratio(p, c1, 'rps'):.3f}x req/s, {ratio(p, c1, 'per_cpu_s'):.3f}x req/CPU-s; "
              f"{label(more)} / plain run {ratio(p, c2, 'rps'):.3f}x req/s, {ratio(p, c2, 'per_cpu_s'):.3f}x req/CPU-s")
        if rate:
            for name, runs in (("plain", p), (label(few), c1), (label(more), c2)):
                lag = med(r["summary"].get("send_lag_ms", {}).get("p99", float("nan")) for r in runs)
                drops = [r["summary"].get("dropped", 0) for r in runs]
                print(f"  {name}: achieved {med(r['summary'].get('achieved_rps', float('nan')) for r in runs):.0f}/s "
                      f"of {rate}/s, dropped {drops}, send lag p99 {lag:.3f} ms")

    # The collector's cost per worker: MORE workers less FEW in the same round, over the
    # difference in workers. A worker's stream is one interval record a second (and its start,
    # its end, and the points of its first requests).
    k = more - few
    pairs = [(x, y) for m, _ in models for x, y in zip(samples[(m, label(few))], samples[(m, label(more))])]
    dcpu = [(y["collector_cpu_s"] - x["collector_cpu_s"]) / k for x, y in pairs]
    dstream = [(y["collector_stream_cpu_s"] - x["collector_stream_cpu_s"]) / k for x, y in pairs]
    dmem = [(y["collector_rss_mib"] - x["collector_rss_mib"]) / k for x, y in pairs]
    base = [x for x, _ in pairs]
    c_cpu, c_mem = med(x["collector_cpu_s"] for x in base), med(x["collector_rss_mib"] for x in base)
    d_cpu, d_stream, d_mem = med(dcpu), med(dstream), med(dmem)
    print(f"collector, per worker ({label(more)} less {few} in the same round, / {k}; median over rounds and models):")
    print(f"  CPU {d_cpu:.4f} s per worker in a {secs} s run, {d_stream:.3f} s of it while streaming: "
          f"{d_stream / secs * 1e3:.3f} ms per worker-second (one interval entry); per round: "
          f"{', '.join(f'{x:.4f}' for x in dcpu)}")
    g = med(r["collector_growth_kib_per_worker_s"] for m, _ in models for r in samples[(m, label(more))])
    gc = med(r["collector_cpu_ms_per_worker_s"] for m, _ in models for r in samples[(m, label(more))])
    print(f"  over the second half of the stream ({label(more)}): RSS {g:.1f} KiB and CPU {gc:.3f} ms "
          f"per worker-second")
    print(f"  peak RSS {d_mem:.2f} MiB per worker ({d_mem / secs * 1024:.1f} KiB per worker-second); per round: "
          f"{', '.join(f'{x:.2f}' for x in dmem)}")
    parts = [b for m, _ in models for r in samples[(m, label(more))] for b in r["part_journal_bytes"]]
    kinds = sorted({kind for b in parts for kind in b})
    print("  a worker's stream (its part's journal, the same lines), median bytes: "
          + ", ".join(f"{kind} {med(b.get(kind, 0) for b in parts):.0f}" for kind in kinds)
          + f"; {med(b.get('interval', 0) for b in parts) / secs:.0f} bytes of interval records a second")
    n = 100
    print(f"  estimate at {n} workers, {secs} s: the {label(few)} collector ({c_cpu:.2f} CPU-s, {c_mem:.1f} MiB) "
          f"plus {n - few} x the per-worker figures: {c_cpu + (n - few) * d_cpu:.1f} CPU-s "
          f"({n * d_stream / secs * 100:.0f}% of a core while streaming), {c_mem + (n - few) * d_mem:.0f} MiB")
    if long_run:
        short = [y for _, y in pairs if y["summary"].get("target_rps") is None]
        m_short = med(y["collector_rss_mib"] for y in short)
        grow = (long_run["collector_rss_mib"] - m_short) / (more * (a.long - secs))
        print(f"  run length: {label(more)} for {a.long} s: collector {long_run['collector_cpu_s']:.2f} CPU-s, "
              f"{long_run['collector_rss_mib']:.1f} MiB peak against {m_short:.1f} MiB for {secs} s: "
              f"{grow * 1024:.1f} KiB per worker-second more; its RSS rose by "
              f"{long_run['collector_growth_kib_per_worker_s']:.1f} KiB per worker-second over the second half of "
              f"the stream; crest {long_run['requests']} server {long_run['server']}")
        lm = long_run["merge"]
        entries = more * a.long
        print(f"  per interval entry over the second half of that stream: collector "
              f"{long_run['collector_cpu_ms_per_worker_s']:.3f} ms of CPU; `crest merge` of the same {more} parts "
              f"afterwards (reading, adding and writing the run): {lm['cpu_s']:.2f} CPU-s, {lm['rss_mib']:.1f} MiB, "
              f"{lm['cpu_s'] / entries * 1e3:.3f} ms per entry, {lm['requests']} requests")
        # Run length: what the collector keeps grows by one interval record a second per
        # worker, and at the end it adds them all up again to write the run.
        stream_ms = long_run["collector_cpu_ms_per_worker_s"]
        # Less the short runs' end, so that what the end costs whatever the length (the reports)
        # is not counted per entry.
        end_short = med(y["collector_cpu_s"] - y["collector_stream_cpu_s"] for y in short)
        end_ms = ((long_run["collector_cpu_s"] - long_run["collector_stream_cpu_s"] - end_short)
                  / (more * (a.long - secs)) * 1e3)
        kib = long_run["collector_growth_kib_per_worker_s"]
        for t in (600, 3600):
            print(f"  estimate at {n} workers for {t} s, from the {a.long} s run: while streaming "
                  f"{n * stream_ms / 10:.0f}% of a core ({stream_ms:.2f} ms per entry); at the end "
                  f"{n * t * end_ms / 1e3:.0f} CPU-s to add the kept parts up again and write the run "
                  f"({end_ms:.2f} ms per entry); memory {m_short + n * t * kib / 1024:.0f} MiB "
                  f"({kib:.1f} KiB per worker-second kept)")
    if mismatches:
        print(f"crest's count differed from nginx's in {len(mismatches)} runs: {mismatches}")
    else:
        print("crest's count equalled nginx's in every run (and the workers' sum the merged count)")
    print(f"load average at end: {loadavg()}")
    json.dump({f"{m} {v}": runs for (m, v), runs in samples.items()} | {"long": long_run}, sys.stderr)
    print(file=sys.stderr)
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
