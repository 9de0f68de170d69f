#!/usr/bin/env python3
"""Peak RSS of crest running scenarios of 1, 100, 1,000 and 10,000 request names against one
`crest target` on loopback, and the memory per name above the 1-name baseline. Called by
names.sh."""

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

NAMES = [1, 100, 1000, 10000]


def scenario(url, names, secs, users):
    """N flows of one request each, each request a name of its own."""
    out = [f"target: {url}", "flows:"]
    for i in range(names):
        out.append(f"  - name: f{i}\n    steps:\n      - request: {{name: r{i}, path: /r{i}}}")
    out.append(f"load: {{users: {users}, duration: {secs}s}}")
    return "\n".join(out) + "\n"


def start_target(exe):
    p = subprocess.Popen([exe, "target", "--listen", "127.0.0.1:0", "--workers", "64", "--service-time", "1ms",
                          "--queue", "1024"], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    url = next(w for w in line.split() if w.startswith("http://")).rstrip("/")
    return p, url


def target_requests(url):
    text = urllib.request.urlopen(url + "/metrics").read().decode()
    return int(float(next(line.split()[1] for line in text.splitlines()
                          if line.startswith("crest_target_requests_total "))))


def run(exe, url, names, secs, users, work):
    path = os.path.join(work, f"names-{names}.yaml")
    with open(path, "w") as f:
        f.write(scenario(url, names, secs, users))
    out = os.path.join(work, f"out-{names}-{os.path.basename(exe)}-{len(os.listdir(work))}")
    before = target_requests(url)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        r = subprocess.run(["/usr/bin/time", "-f", "%M %e", "-o", tf.name, exe, "run", path, "--quiet",
                            "--summary-json", "-", "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        fields = tf.read().split()
    if r.returncode not in (0, 1):
        raise RuntimeError(f"crest exited {r.returncode} with {names} names: {r.stderr[-800:]}")
    served = target_requests(url) - before
    s = json.loads(r.stdout)
    return int(fields[-2]), float(fields[-1]), s["requests"], served


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crest", required=True)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--users", type=int, default=32)
    a = ap.parse_args()
    crests = [("crest", a.crest)] + [tuple(v.split("=", 1)) for v in a.variant]
    work = tempfile.mkdtemp(prefix="crest-bench-names-")
    atexit.register(shutil.rmtree, work, True)
    target, url = start_target(a.crest)
    try:
        print(f"{a.users} users, {a.seconds} s per run, against crest target (64 workers, 1 ms) on loopback")
        print(f"{'build':<10} {'names':>6} {'requests':>9} {'peak MiB':>9} {'KiB/name':>9} {'wall s':>7}  counts")
        for name, exe in crests:
            base = None
            for n in NAMES:
                try:
                    rss, wall, requests, served = run(exe, url, n, a.seconds, a.users, work)
                except RuntimeError as e:
                    print(f"{name:<10} {n:>6} failed: {e}", flush=True)
                    break
                base = rss if base is None else base
                per = "" if n == 1 else f"{(rss - base) / (n - 1):.1f}"
                same = "equal" if requests == served else f"crest {requests}, target {served}"
                print(f"{name:<10} {n:>6} {requests:>9} {rss / 1024:>9.1f} {per:>9} {wall:>7.1f}  {same}", flush=True)
    finally:
        target.terminate()
        target.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
