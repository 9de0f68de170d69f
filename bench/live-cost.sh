#!/usr/bin/env bash
# What `--web` costs the engine: the engine benchmark of bench/run.sh (crest against nginx on
# loopback, nginx on core 0, crest on core 1, --threads 1) run plainly, with `--web` and a page
# open, and with `--web` and no page, in interleaved rounds of the same run. The page is a loop
# that reads `GET /api/state` every second as the page does (only the points not yet seen, and with them
# the verdict and findings so far, judged by crest's listener), until it has seen the end.
# crest's CPU-seconds include its listener's and the verdict's, on the same core as the engine.
#
# Usage: bench/live-cost.sh [SECONDS] [CONNECTIONS] [ROUNDS]   (default: 10 s, 64, 5 rounds)
# CREST_BENCH_PORT moves nginx off 18080, as for bench/run.sh.
# Environment: CREST_BIN=PATH measures that build (default: this tree's release build).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-10}"
conns="${2:-64}"
rounds="${3:-5}"

if ! command -v nginx >/dev/null 2>&1 || ! [ -x /usr/bin/time ]; then
  echo "installing nginx and GNU time from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light time >/dev/null
fi
if [ -z "${CREST_BIN:-}" ]; then
  (cd "$root" && cargo build --release -q -p crest)
fi
crest="${CREST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/crest}"

# In a session of its own: compare.py raises its session's scheduling group to the highest
# priority, which would otherwise stay with the caller's shell.
BENCH_DIR="$here" exec setsid -w python3 - "$crest" "$secs" "$conns" "$rounds" <<'PY'
import glob, json, os, signal, socket, statistics, sys, tempfile, threading, time, urllib.request
sys.path.insert(0, os.environ["BENCH_DIR"])
from compare import GEN_CORE, NGINX_CORE, PORT, start_nginx, timed

crest, secs, conns, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
url = f"http://127.0.0.1:{PORT}/"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crest_pid(port):
    flag = f"--web=127.0.0.1:{port}".encode()
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            args = open(cmdline, "rb").read().split(b"\0")
        except OSError:
            continue
        if flag in args and not args[0].endswith(b"time"):
            return cmdline.split("/")[2]
    return None


def listener_cpu_s(pid):
    """CPU-seconds of crest's listener threads: the server (crest-web) and the pool it judges
    the verdict on (tokio's blocking threads)."""
    total = 0
    for stat in glob.glob(f"/proc/{pid}/task/*/stat"):
        try:
            comm, rest = open(stat).read().split("(", 1)[1].rsplit(")", 1)
        except (OSError, ValueError):
            continue
        if comm == "crest-web" or comm.startswith("tokio-runtime"):
            f = rest.split()
            total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")


def page(port, done, seen):
    """Reads /api/state every second as the page does, until the run has ended."""
    base = f"http://127.0.0.1:{port}/api/state"
    start, epoch = 0, None
    pid = None
    while not done.is_set():
        pid = pid or crest_pid(port)
        if pid:
            try:
                seen["listener_cpu_s"] = listener_cpu_s(pid)
            except OSError:
                pass
        try:
            q = f"?from={start}" + (f"&epoch={epoch}" if epoch is not None else "")
            with urllib.request.urlopen(base + q, timeout=5) as r:
                s = json.load(r)
            seen["reads"] += 1
            if s.get("verdict"):
                seen["verdicts"] += 1
            start = s["from"] + len(s["points"]) - (1 if s["filling"] else 0)
            epoch = s["epoch"]
            if s["ended"]:
                if pid:
                    seen["listener_cpu_s"] = listener_cpu_s(pid)
                return
        except OSError:
            pass  # not listening yet
        time.sleep(1.0)


def run(web, reading=True):
    out = tempfile.mkdtemp(prefix="crest-bench-live-")
    cmd = [crest, "run", url, "-c", str(conns), "-d", f"{secs}s", "--threads", "1", "--quiet",
           "--summary-json", "-", "--out", out]
    seen = {"reads": 0, "verdicts": 0, "listener_cpu_s": 0.0}
    done = threading.Event()
    reader = None
    if web:
        port = free_port()
        cmd += [f"--web=127.0.0.1:{port}", "--web-token", "bench"]
        if reading:
            reader = threading.Thread(target=page, args=(port, done, seen), daemon=True)
            reader.start()
    try:
        stdout, cpu, rss = timed(cmd)
    finally:
        done.set()
    if reader:
        reader.join(timeout=10)
    s = json.loads(stdout)
    return {"rps": s["requests"] / s["duration_s"], "per_cpu_s": s["requests"] / cpu, "cpu_s": cpu,
            "rss_mib": rss / 1024, **seen}


prefix = tempfile.mkdtemp(prefix="crest-bench-nginx-")
nginx = start_nginx(prefix)
variants = {"plain": (False, False), "--web, page open": (True, True), "--web, no page": (True, False)}
samples = {name: [] for name in variants}
try:
    run(False)  # warm-up: nginx's and the page cache's cold start
    for i in range(rounds):
        # Rotating which goes first, so a trend over the minutes hits all alike.
        names = list(variants)
        for name in names[i % len(names):] + names[:i % len(names)]:
            web, reading = variants[name]
            r = run(web, reading)
            samples[name].append(r)
            print(f"round {i + 1} {name:<17} {r['rps']:>9.0f} req/s {r['per_cpu_s']:>9.0f} req/CPU-s"
                  f" {r['rss_mib']:>6.1f} MiB" + (f"  ({r['reads']} page reads, {r['verdicts']} with a verdict; listener {r['listener_cpu_s']:.2f} CPU-s)" if reading and web else ""),
                  file=sys.stderr)
finally:
    nginx.send_signal(signal.SIGQUIT)
    nginx.wait(timeout=10)

print(f"nginx (1 worker) on core {NGINX_CORE}; crest --threads 1 on core {GEN_CORE}; {conns} connections, "
      f"{secs} s each, keep-alive; {rounds} interleaved rounds, median (min-max)")
print(f"{'crest':<18} {'req/s':>24} {'req/CPU-s':>24} {'RSS MiB':>9}")
for name, runs in samples.items():
    def col(k, d=0):
        xs = [r[k] for r in runs]
        return f"{statistics.median(xs):.{d}f} ({min(xs):.{d}f}-{max(xs):.{d}f})"
    print(f"{name:<18} {col('rps'):>24} {col('per_cpu_s'):>24} {statistics.median(r['rss_mib'] for r in runs):>9.1f}")
for name in list(variants)[1:]:
    p, w = (statistics.median(r["rps"] for r in samples[k]) for k in ("plain", name))
    pc, wc = (statistics.median(r["per_cpu_s"] for r in samples[k]) for k in ("plain", name))
    pairs = sorted(b["per_cpu_s"] / a["per_cpu_s"] for a, b in zip(samples["plain"], samples[name]))
    print(f"{name} / plain: {w / p:.3f}x req/s, {wc / pc:.3f}x req/CPU-s; per round (req/CPU-s): "
          f"{', '.join(f'{x:.3f}' for x in pairs)}, median {statistics.median(pairs):.3f}")
listener = [r["listener_cpu_s"] for r in samples["--web, page open"]]
cpu = [r["cpu_s"] for r in samples["--web, page open"]]
print(f"crest's listener threads (page reads and verdicts): median {statistics.median(listener):.3f} CPU-s "
      f"of {statistics.median(cpu):.2f} CPU-s per run")
print(json.dumps(samples), file=sys.stderr)
PY
