#!/usr/bin/env bash
# How close to its slot crest sends each open-model arrival: send lag p50/p99/p99.9 (and the
# service time beside the latency) at several rates against nginx on loopback (the same nginx
# as bench/run.sh: one worker on core 0), next to the machine's own wake-up latency measured by
# cyclictest in the same minutes. Each run also prints its lag p99 after its first second
# (lag99s, from the journal's per-second histograms: the first second holds the start, where
# arrivals wait for connections to be opened) and the CPU time the kernel's DAMON threads
# (kdamond, a virtual machine's memory reclaim) took meanwhile, which preempts whatever runs,
# and how long crest's engine thread waited for a core while sending (the kernel's account).
#
# Usage: bench/pacing.sh [SECONDS] [RATE ...]   (default: 5 s at 1000 10000 50000 arrivals/s)
# Environment:
#   ROUNDS=N            rounds of every run (default 1); medians are printed at the end
#   MODES="pinned plain" pinned (default): --threads 1, the engine thread moved to core 1 and
#                       crest at the highest priority when run as root; plain: `crest run URL
#                       --rate R -d SECONDS` as a user runs it (default threads, no pinning,
#                       normal priority)
#   CREST_BIN=PATH      the build measured (default: this tree's release build)
#   CREST_BEFORE=PATH   another build (e.g. the one before a change) run in the same rounds,
#                       right after CREST_BIN, for a before/after on the same machine state
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-5}"
shift $(( $# < 1 ? $# : 1 ))
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(1000 10000 50000)

if ! command -v nginx >/dev/null 2>&1 || ! [ -x /usr/bin/time ] || ! command -v cyclictest >/dev/null 2>&1; then
  echo "installing nginx, GNU time and rt-tests (cyclictest) from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light time rt-tests >/dev/null
fi
if ! python3 -c 'import hdrh' 2>/dev/null; then
  echo "installing hdrhistogram (PyPI) to read the journal's per-second send lag" >&2
  python3 -m pip install -q hdrhistogram >&2
fi
if [ -z "${CREST_BIN:-}" ]; then
  (cd "$root" && cargo build --release -q -p crest)
fi
crest="${CREST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/crest}"

# In a session of its own: compare.py raises its session's scheduling group to the highest
# priority, which would otherwise stay with the caller's shell and every build it starts later.
BENCH_DIR="$here" exec setsid -w python3 - "$crest" "$secs" "${rates[@]}" <<'PY'
import glob, json, os, shutil, signal, statistics, subprocess, sys, tempfile, time
from hdrh.histogram import HdrHistogram
sys.path.insert(0, os.environ["BENCH_DIR"])
from compare import GEN_CORE, NGINX_CORE, PORT, PRIORITY, start_nginx


def pin_engine(parent):
    """Moves the engine thread (crest-engine-0) of `parent`'s child to GEN_CORE once it appears.
    Until then it runs on nginx's core, so the look is tight: the child is found through its
    parent's list of children, and only its own threads are read, every 0.1 ms (a look over
    every process's /proc files took milliseconds, and the engine shared nginx's core for the
    run's first 20-30 ms, which was then the largest lag of a 5 s run)."""
    deadline = time.time() + 5
    children = f"/proc/{parent}/task/{parent}/children"
    while time.time() < deadline:
        try:
            for child in open(children).read().split():
                for comm in glob.glob(f"/proc/{child}/task/*/comm"):
                    if open(comm).read().strip() == "crest-engine-0":
                        subprocess.run(["taskset", "-p", "-c", GEN_CORE, comm.split("/")[4]],
                                       check=True, stdout=subprocess.DEVNULL)
                        return
        except OSError:
            pass
        time.sleep(0.0001)
    sys.exit("crest's engine thread did not appear")


def cyclictest(secs, interval_us=20):
    """The machine's own wake-up latency on GEN_CORE: a normal-priority thread (as crest's) at the
    same nice as crest, woken every `interval_us` (50,000 times a second, the top rate here).
    Returns (p99, p99.9, max) in ms."""
    buckets = 2000
    out = subprocess.run(
        PRIORITY + ["cyclictest", "-q", "-m", "-t1", "-a", GEN_CORE, "-i", str(interval_us),
                    "-D", str(secs), "-h", str(buckets)],
        check=True, capture_output=True, text=True).stdout
    counts, overflow, worst = [0] * buckets, 0, 0
    for line in out.splitlines():
        if line.startswith("# Histogram Overflows:"):
            overflow = int(line.split()[-1])
        elif line.startswith("# Max Latencies:"):
            worst = int(line.split()[-1])
        elif line[:1].isdigit():
            us, n = line.split()[:2]
            counts[int(us)] = int(n)
    total = sum(counts) + overflow

    def pct(q):
        seen = 0
        for us, n in enumerate(counts):
            seen += n
            if seen >= q * total:
                return us / 1000
        return buckets / 1000
    return pct(0.99), pct(0.999), worst / 1000


def kdamond_ns():
    """CPU time used so far by the kernel's DAMON threads (kdamond.N), in ns. Where the kernel
    runs DAMON (memory reclaim of a virtual machine, here), they take a core for 1 to 4 ms
    about twice a second whatever runs on it, so each run prints their share beside its lag."""
    total = 0
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            if open(comm).read().startswith("kdamond"):
                total += int(open(comm[:-4] + "schedstat").read().split()[0])
        except (OSError, ValueError):
            pass
    return total


def run(binary, mode, rate, secs):
    out = tempfile.mkdtemp(prefix="crest-pacing-")
    # Beside the run directory, not in it: crest writes only into an empty one.
    timing = out + ".time"
    args = [binary, "run", f"http://127.0.0.1:{PORT}/", "--rate", str(rate), "-d", f"{secs}s",
            "-q", "--summary-json", "-", "--out", out]
    if mode == "pinned":
        # crest starts on nginx's core; its engine thread moves to its own core as soon as it
        # exists, so what is measured is what one engine thread can hold, not how the kernel
        # shares a core between it and crest's controller, journal and monitor threads.
        cmd = PRIORITY + ["/usr/bin/time", "-f", "%U %S", "-o", timing, "taskset", "-c", NGINX_CORE] + args + ["--threads", "1"]
    else:
        cmd = ["/usr/bin/time", "-f", "%U %S", "-o", timing] + args
    # Every core again for crest (this script keeps to nginx's): plain runs as a user's would.
    every = set(range(os.cpu_count()))
    damon = kdamond_ns()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: os.sched_setaffinity(0, every))
    if mode == "pinned":
        pin_engine(p.pid)
    stdout, stderr = p.communicate()
    damon = (kdamond_ns() - damon) / 1e6
    if p.returncode not in (0, 1):
        sys.exit(f"crest failed ({p.returncode}): {stderr}")
    s = json.loads(stdout)
    cpu = sum(float(x) for x in open(timing).read().split()[-2:])
    # The send lag of the run after its first second, from the journal's per-second histograms:
    # the first second holds the start, where every arrival needs a connection of its own.
    # Each second's histogram is only as wide as its largest value (crest's grow as needed), and
    # this library's do not: the sum is sized for an hour of microseconds up front.
    after = None
    for line in open(os.path.join(out, "journal.jsonl")):
        e = json.loads(line)
        if e.get("entry") == "interval" and e["interval"]["t_s"] >= 1.0 and e.get("send_lag"):
            if after is None:
                after = HdrHistogram(1, 3_600_000_000, 3)
            after.add(HdrHistogram.decode(e["send_lag"]))
    # The engine thread's own wait for a core while sending (older builds do not write it).
    waited = json.load(open(os.path.join(out, "results.json"))).get("client", {}).get("core_wait_s")
    # A run at 50,000/s writes megabytes; dozens of rounds filled a shared disk.
    shutil.rmtree(out, ignore_errors=True)
    os.remove(timing)
    lag, svc = s["send_lag_ms"], s.get("service_ms") or {}
    return {"achieved": s["achieved_rps"], "dropped": s["dropped"], "lag50": lag["p50"],
            "lag99": lag["p99"], "lag999": lag["p999"], "lagmax": lag["max"],
            "lag99s": after.get_value_at_percentile(99) / 1000 if after else float("nan"),
            "lat50": s["latency_ms"]["p50"], "svc50": svc.get("p50", float("nan")), "cpu": cpu,
            "damon": damon, "wait": waited * 1e3 if waited is not None else float("nan")}


# This script's own polling (above all pin_engine's) stays on nginx's core, off the one measured.
os.sched_setaffinity(0, {int(NGINX_CORE)})
crest, secs, rates = sys.argv[1], int(sys.argv[2]), [int(r) for r in sys.argv[3:]]
builds = [("now", crest)] + ([("before", os.environ["CREST_BEFORE"])] if os.environ.get("CREST_BEFORE") else [])
modes = os.environ.get("MODES", "pinned").split()
rounds = int(os.environ.get("ROUNDS", "1"))
prefix = tempfile.mkdtemp(prefix="crest-bench-nginx-")
nginx = start_nginx(prefix)
print(f"load average at start: {os.getloadavg()[0]:.2f}; {secs} s per run; nginx (1 worker) on core"
      f" {NGINX_CORE}; pinned: --threads 1, engine thread on core {GEN_CORE}; plain: as a user runs it; ms (lag99s: lag p99 after the first second; cpu: crest's CPU-s; damon: ms of the kernel's kdamond threads during the run; wait: ms crest's engine threads waited for a core while sending, as results.json's client.core_wait_s)")
cols = ["achieved", "dropped", "lag50", "lag99", "lag999", "lagmax", "lag99s", "lat50", "svc50", "cpu", "damon", "wait"]
head = f"{'round':>5} {'mode':>6} {'build':>6} {'rate/s':>7} " + " ".join(f"{c:>8}" for c in cols)
print(head)
rows, machine = [], []
try:
    for r in range(1, rounds + 1):
        ct = cyclictest(secs)
        machine.append(ct)
        print(f"{r:>5} cyclictest on core {GEN_CORE}, every 20 us: p99 {ct[0]:.3f} p99.9 {ct[1]:.3f} max {ct[2]:.3f}"
              f" (load average {os.getloadavg()[0]:.2f})", flush=True)
        for mode in modes:
            for rate in rates:
                for name, binary in builds:
                    x = run(binary, mode, rate, secs)
                    rows.append((mode, name, rate, x))
                    print(f"{r:>5} {mode:>6} {name:>6} {rate:>7} " + " ".join(
                        f"{x[c]:>8.0f}" if c in ("achieved", "dropped") else f"{x[c]:>8.3f}" for c in cols), flush=True)
finally:
    nginx.send_signal(signal.SIGQUIT)
    nginx.wait(timeout=10)
    shutil.rmtree(prefix, ignore_errors=True)
print(f"\nmedians of {rounds} round(s); load average at end: {os.getloadavg()[0]:.2f}")
print(f"cyclictest p99 {statistics.median(m[0] for m in machine):.3f} p99.9 {statistics.median(m[1] for m in machine):.3f}"
      f" max {statistics.median(m[2] for m in machine):.3f}")
print(head.replace("round", "     ", 1))
for mode in modes:
    for rate in rates:
        for name, _ in builds:
            xs = [x for (m, n, rt, x) in rows if (m, n, rt) == (mode, name, rate)]
            print(f"{'':>5} {mode:>6} {name:>6} {rate:>7} " + " ".join(
                f"{statistics.median(x[c] for x in xs):>8.{0 if c in ('achieved', 'dropped') else 3}f}" for c in cols))
PY
