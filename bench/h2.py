#!/usr/bin/env python3
"""crest's HTTP/2 against h2load on one nginx (TLS with ALPN h2, and cleartext prior knowledge):
requests per generator CPU-second at 1 and 100 streams per connection. Called by h2.sh."""

import argparse
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import NGINX_CORE, timed  # noqa: E402

TLS_PORT = 18443
H2C_PORT = 18082

def start_nginx(prefix):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", f"{prefix}/key.pem", "-out", f"{prefix}/cert.pem"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conf = compare.nginx_conf(
        prefix,
        listen=[f"listen 127.0.0.1:{TLS_PORT} ssl http2 backlog=8192;",
                f"listen 127.0.0.1:{H2C_PORT} http2 backlog=8192;",
                f"ssl_certificate {prefix}/cert.pem;",
                f"ssl_certificate_key {prefix}/key.pem;"],
        http_extra=["http2_max_requests 100000000;", "http2_max_concurrent_streams 128;"])
    return compare.start_nginx(prefix, conf, TLS_PORT)


def run_crest(exe, url, secs, conns, streams):
    out, cpu, rss = timed([exe, "run", url, "--http2", "--insecure", "-c", str(conns * streams),
                           "--max-streams", str(streams), "-d", f"{secs}s", "--threads", "1", "--quiet",
                           "--summary-json", "-", "--out", compare.scratch("crest-bench-")])
    s = json.loads(out)
    if s["failures"]:
        raise RuntimeError(f"crest: {s['failures']} failures: {s['errors']}")
    return s["requests"], s["duration_s"], cpu, rss


def run_h2load(url, secs, conns, streams):
    out, cpu, rss = timed(["h2load", "-t1", f"-c{conns}", f"-m{streams}", "-D", str(secs), url])
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    d = float(re.search(r"finished in ([\d.]+)s", out).group(1))
    return int(m.group(2)), d, cpu, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crest", required=True)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PATH",
                    help="another crest build to run in the same rounds, e.g. the one before a change")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--case", action="append", default=[], metavar="LABEL",
                    help="run only this case (e.g. 'https 4x100'); repeatable")
    a = ap.parse_args()
    # (label, url, connections, streams per connection)
    cases = []
    for scheme, port in [("https", TLS_PORT), ("http", H2C_PORT)]:
        url = f"{scheme}://127.0.0.1:{port}/"
        cases += [(f"{scheme} 64x1", url, 64, 1), (f"{scheme} 4x100", url, 4, 100)]
    if a.case:
        cases = [c for c in cases if c[0] in a.case]
    # (name, crest executable, or None for h2load)
    tools = [("crest", a.crest)] + [tuple(v.split("=", 1)) for v in a.variant] + [("h2load", None)]
    prefix = compare.scratch("crest-bench-h2-")
    nginx = start_nginx(prefix)
    samples = {}
    try:
        run_h2load(cases[0][1], 1, 8, 10)
        for _ in range(a.rounds):
            for label, url, conns, streams in cases:
                for tool, exe in tools:
                    try:
                        if exe is None:
                            n, d, cpu, rss = run_h2load(url, a.seconds, conns, streams)
                        else:
                            n, d, cpu, rss = run_crest(exe, url, a.seconds, conns, streams)
                    except Exception as e:
                        print(f"{tool} {label}: {e}", file=sys.stderr)
                        continue
                    samples.setdefault((label, tool), []).append(
                        {"rps": n / d, "per_cpu_s": n / cpu if cpu > 0 else float("nan"), "rss_mib": rss / 1024})
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    print(f"nginx (1 worker, HTTP/2) on core {NGINX_CORE}; each generator on the other core; "
          f"{a.seconds} s each; median of {a.rounds} rounds")
    width = max(len(t) for t, _ in tools)
    print(f"{'case':<14} {'tool':<{width}} {'req/s':>9} {'req/CPU-s':>10} {'RSS MiB':>8}  "
          f"{'/ h2load':>8}  req/CPU-s per round (k)")
    for label, _, _, _ in cases:
        rows = {t: {k: median([s[k] for s in samples.get((label, t), [])]) for k in ("rps", "per_cpu_s", "rss_mib")}
                for t, _ in tools if samples.get((label, t))}
        for t, r in rows.items():
            ratio = ""
            if t != "h2load" and "h2load" in rows:
                ratio = f"{r['per_cpu_s'] / rows['h2load']['per_cpu_s']:.2f}x"
            per_round = "/".join(f"{s['per_cpu_s'] / 1000:.0f}" for s in samples[(label, t)])
            print(f"{label:<14} {t:<{width}} {r['rps']:>9.0f} {r['per_cpu_s']:>10.0f} {r['rss_mib']:>8.1f}  "
                  f"{ratio:>8}  {per_round}")
    print(json.dumps({f"{k[0]}/{k[1]}": v for k, v in samples.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
