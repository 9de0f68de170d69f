#!/usr/bin/env python3
"""Peak RSS of crest and wrk each holding many keep-alive connections to one nginx on loopback,
in the same run. Called by conns.sh."""

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import NGINX_CORE, run_wrk, timed  # noqa: E402
import compare  # noqa: E402

PORT = compare.PORT


def start_nginx(prefix, conns):
    conf = compare.nginx_conf(prefix, connections=conns + 1000,
                              main_extra=[f"worker_rlimit_nofile {conns + 2000};"],
                              listen=[f"listen 127.0.0.1:{PORT} backlog=16384;"])
    return compare.start_nginx(prefix, conf)


def run_crest(exe, url, secs, conns):
    out, cpu, rss = timed([exe, "run", url, "-c", str(conns), "-d", f"{secs}s", "--threads", "1", "--timeout", "30s",
                           "--quiet", "--summary-json", "-", "--out", compare.scratch("crest-bench-")])
    s = json.loads(out)
    return s["requests"], s["duration_s"], cpu, rss, s["connections"], s["failures"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crest", required=True)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    url = f"http://127.0.0.1:{PORT}/"
    prefix = compare.scratch("crest-bench-conns-")
    nginx = start_nginx(prefix, a.connections)
    crests = [("crest", a.crest)] + [tuple(v.split("=", 1)) for v in a.variant]
    try:
        print(f"{a.connections} keep-alive connections to nginx (1 worker, core {NGINX_CORE}), "
              f"{a.seconds} s, generator on the other core")
        print(f"{'tool':<14} {'RSS MiB':>8} {'req/s':>9} {'req/CPU-s':>10} {'notes'}")
        for _ in range(a.rounds):
            for name, exe in crests:
                n, d, cpu, rss, c, failed = run_crest(exe, url, a.seconds, a.connections)
                print(f"{name:<14} {rss / 1024:>8.1f} {n / d:>9.0f} {n / cpu:>10.0f} "
                      f"{c} users, {failed} failed", flush=True)
            n, d, cpu, rss = run_wrk(url, a.seconds, a.connections)
            print(f"{'wrk':<14} {rss / 1024:>8.1f} {n / d:>9.0f} {n / cpu:>10.0f}", flush=True)
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)


if __name__ == "__main__":
    main()
