#!/usr/bin/env bash
# How close to its slot crest sends each open-model arrival: send lag p50/p99 (and the service
# time beside the latency) at several rates, one engine thread, against nginx on loopback (the
# same nginx as bench/run.sh: one worker on core 0, crest on core 1, both at the highest priority
# when run as root).
# Usage: bench/pacing.sh [SECONDS] [RATE ...]   (default: 5 s at 1000 10000 50000 arrivals/s)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-5}"
shift $(( $# < 1 ? $# : 1 ))
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(1000 10000 50000)

if ! command -v nginx >/dev/null 2>&1 || ! [ -x /usr/bin/time ]; then
  echo "installing nginx and GNU time from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light time >/dev/null
fi
(cd "$root" && cargo build --release -q -p crest)
crest="${CREST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/crest}"

BENCH_DIR="$here" exec python3 - "$crest" "$secs" "${rates[@]}" <<'PY'
import json, os, signal, subprocess, sys, tempfile
sys.path.insert(0, os.environ["BENCH_DIR"])
from compare import GEN_CORE, NGINX_CORE, PORT, PRIORITY, start_nginx


def pin_engine(parent):
    """Moves the engine thread (crest-engine-0) of `parent`'s child to GEN_CORE once it appears."""
    import glob, time
    deadline = time.time() + 5
    while time.time() < deadline:
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                pid, ppid = stat.split("/")[2], open(stat).read().rsplit(")", 1)[1].split()[1]
                if ppid != str(parent):
                    continue
                for comm in glob.glob(f"/proc/{pid}/task/*/comm"):
                    if open(comm).read().strip() == "crest-engine-0":
                        subprocess.run(["taskset", "-p", "-c", GEN_CORE, comm.split("/")[4]],
                                       check=True, stdout=subprocess.DEVNULL)
                        return
            except (OSError, IndexError):
                pass
        time.sleep(0.001)
    sys.exit("crest's engine thread did not appear")

crest, secs, rates = sys.argv[1], sys.argv[2], [int(r) for r in sys.argv[3:]]
prefix = tempfile.mkdtemp(prefix="crest-bench-nginx-")
nginx = start_nginx(prefix)
print(f"open model, --threads 1: the engine thread on core {GEN_CORE}, crest's other threads and"
      f" nginx (1 worker) on core {NGINX_CORE}, {secs} s per rate; ms")
print(f"{'rate/s':>8} {'achieved':>9} {'dropped':>8} {'lag p50':>8} {'lag p99':>8} {'lag max':>8}"
      f" {'latency p50':>12} {'service p50':>12} {'CPU s':>6}")
try:
    for rate in rates:
        out = tempfile.mkdtemp(prefix="crest-pacing-")
        # Beside the run directory, not in it: crest writes only into an empty one.
        timing = out + ".time"
        # crest starts on nginx's core; its engine thread moves to its own core as soon as it
        # exists, so what is measured is what one engine thread can hold, not how the kernel
        # shares a core between it and crest's controller, journal and monitor threads (on one
        # core, each wake-up of those costs the engine a time slice: a send lag p99 of
        # milliseconds at 50,000 arrivals/s).
        p = subprocess.Popen(
            PRIORITY + ["/usr/bin/time", "-f", "%U %S", "-o", timing, "taskset", "-c", NGINX_CORE, crest, "run",
             f"http://127.0.0.1:{PORT}/", "--rate", str(rate), "-d", f"{secs}s", "--threads", "1",
             "-q", "--summary-json", "-", "--out", out],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pin_engine(p.pid)
        stdout, _ = p.communicate()
        s = json.loads(stdout)
        cpu = sum(float(x) for x in open(timing).read().split()[-2:])
        lag, svc = s["send_lag_ms"], s.get("service_ms") or {}
        print(f"{rate:>8} {s['achieved_rps']:>9.0f} {s['dropped']:>8} {lag['p50']:>8.3f} {lag['p99']:>8.3f}"
              f" {lag['max']:>8.3f} {s['latency_ms']['p50']:>12.3f} {svc.get('p50', float('nan')):>12.3f} {cpu:>6.2f}")
finally:
    nginx.send_signal(signal.SIGQUIT)
    nginx.wait(timeout=10)
PY
