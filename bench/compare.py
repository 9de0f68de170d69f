#!/usr/bin/env python3
"""Runs each load generator against one nginx and prints requests/s, requests per generator
CPU-second, peak RSS, and crest's ratio to each peer. Called by run.sh."""

import argparse
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# CREST_BENCH_PORT moves the benchmark's nginx when another program holds the usual port.
PORT = int(os.environ.get("CREST_BENCH_PORT", "18080"))
NGINX_CORE = "0"
GEN_CORE = "1"
# Benchmarks run on shared machines: at the highest priority (root only) the generator and nginx
# keep their cores against other work, so a timing figure (send lag above all) measures them and
# not whatever else was compiling. Counts of CPU-seconds do not change with priority.
# Where the kernel groups processes by session (autogroup), nice ranks them only inside their own
# group, so the group's own weight is raised too.
PRIORITY = ["nice", "-n", "-20"] if os.geteuid() == 0 else []
if PRIORITY:
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-20")
    except OSError:
        pass

NGINX_CONF = """
worker_processes 1;
{main_extra}daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections {connections}; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
{http_extra}  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  server {{
{listen}    location / {{ return 200 "ok\\n"; }}
  }}
}}
"""


def nginx_conf(prefix, listen=None, http_extra=(), main_extra=(), connections=8192):
    """The one nginx configuration every benchmark serves "ok" from: `listen` (lines, default
    plain HTTP/1.1 on PORT), `http_extra` and `main_extra` (lines added to the http block and
    the top level), `connections` per worker."""
    listen = listen or [f"listen 127.0.0.1:{PORT} backlog=8192;"]
    return NGINX_CONF.format(
        prefix=prefix,
        connections=connections,
        main_extra="".join(f"{line}\n" for line in main_extra),
        http_extra="".join(f"  {line}\n" for line in http_extra),
        listen="".join(f"    {line}\n" for line in listen),
    )


def start_nginx(prefix, conf=None, port=PORT):
    """Starts nginx with `conf` (from nginx_conf; default: plain HTTP/1.1) and waits for `port`."""
    import socket

    # A port already taken would let the wait below succeed against another program's server,
    # and every generator would then measure that server instead of this nginx.
    with socket.socket() as probe:
        # As nginx binds: connections of an earlier run waiting out TIME_WAIT are no obstacle.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as e:
            sys.exit(f"port {port} is in use by another program ({e}); set CREST_BENCH_PORT to another port")
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(conf if conf is not None else nginx_conf(prefix))
    proc = subprocess.Popen(
        PRIORITY + ["taskset", "-c", NGINX_CORE, "nginx", "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("nginx did not start; see " + os.path.join(prefix, "error.log"))


def scratch(prefix, **kw):
    """A temporary directory removed when the script exits, however it ends but by a kill:
    every crest run writes a results directory, and rounds of them would fill /tmp."""
    d = tempfile.mkdtemp(prefix=prefix, **kw)
    atexit.register(shutil.rmtree, d, True)
    return d


def timed(cmd):
    """Runs cmd pinned to the generator core under GNU time; returns (stdout, cpu_s, rss_kb)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = PRIORITY + ["taskset", "-c", GEN_CORE, "/usr/bin/time", "-f", "%U %S %M", "-o", tf.name] + cmd
        out = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed ({out.returncode}): {out.stderr[-500:]}")
        user, sys_, rss = tf.read().split()[-3:]
        return out.stdout, float(user) + float(sys_), int(rss)


def run_crest(exe, url, secs, conns):
    out, cpu, rss = timed([exe, "run", url, "-c", str(conns), "-d", f"{secs}s", "--threads", "1",
                           "--quiet", "--summary-json", "-", "--out", scratch("crest-bench-")])
    s = json.loads(out)
    return s["requests"], s["duration_s"], cpu, rss


def run_wrk(url, secs, conns):
    out, cpu, rss = timed(["wrk", "-t1", f"-c{conns}", f"-d{secs}s", url])
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    n, d, unit = int(m.group(1)), float(m.group(2)), m.group(3)
    d = d / 1000 if unit == "ms" else d * 60 if unit == "m" else d
    return n, d, cpu, rss


def run_hey(url, secs, conns):
    out, cpu, rss = timed(["hey", "-z", f"{secs}s", "-c", str(conns), url])
    n = sum(int(x) for x in re.findall(r"\[\d{3}\]\s+(\d+) responses", out))
    d = float(re.search(r"Total:\s+([\d.]+) secs", out).group(1))
    return n, d, cpu, rss


def run_oha(url, secs, conns):
    out, cpu, rss = timed(["oha", "--no-tui", "--output-format", "json", "-z", f"{secs}s", "-c", str(conns), url])
    s = json.loads(out)
    d = s["summary"]["total"]
    return round(s["summary"]["requestsPerSec"] * d), d, cpu, rss


def run_ab(url, secs, conns):
    out, cpu, rss = timed(["ab", "-q", "-k", "-c", str(conns), "-t", str(secs), "-n", "100000000", url])
    n = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
    d = float(re.search(r"Time taken for tests:\s+([\d.]+)", out).group(1))
    return n, d, cpu, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crest", required=True)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tool, interleaved; medians are shown")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PATH",
                    help="another crest binary to measure, e.g. an older build")
    a = ap.parse_args()
    url = f"http://127.0.0.1:{PORT}/"

    tools = [("crest", lambda: run_crest(a.crest, url, a.seconds, a.connections)),
             ("wrk", lambda: run_wrk(url, a.seconds, a.connections))]
    for v in a.variant:
        name, path = v.split("=", 1)
        tools.append((name, lambda path=path: run_crest(path, url, a.seconds, a.connections)))
    for name, fn in [("oha", run_oha), ("hey", run_hey), ("ab", run_ab)]:
        if shutil.which(name):
            tools.append((name, lambda fn=fn: fn(url, a.seconds, a.connections)))

    prefix = scratch("crest-bench-nginx-")
    nginx = start_nginx(prefix)
    samples = {name: [] for name, _ in tools}
    try:
        # A short warm-up so that the first tool does not pay for nginx's cold start.
        run_wrk(url, 2, a.connections)
        # Rounds interleave the tools, so that a noisy minute on a shared machine hits all alike.
        for _ in range(a.rounds):
            for name, fn in tools:
                try:
                    n, d, cpu, rss = fn()
                except Exception as e:  # a peer that fails is reported, not fatal
                    print(f"{name}: {e}", file=sys.stderr)
                    continue
                samples[name].append({"requests": n, "rps": n / d, "per_cpu_s": n / cpu if cpu > 0 else float("nan"),
                                      "cpu_s": cpu, "rss_mib": rss / 1024})
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=10)

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    rows = {name: {k: median([s[k] for s in runs]) for k in runs[0]} for name, runs in samples.items() if runs}
    print(f"nginx (1 worker) on core {NGINX_CORE}; each generator on core {GEN_CORE}; "
          f"{a.connections} connections, {a.seconds} s each, keep-alive; median of {a.rounds} rounds")
    print(f"{'tool':<6} {'req/s':>10} {'req/CPU-s':>11} {'CPU s':>7} {'RSS MiB':>8}   crest ratio (req/s, req/CPU-s)")
    c = rows.get("crest")
    for name, r in rows.items():
        ratio = ""
        if c and name != "crest":
            ratio = f"{c['rps'] / r['rps']:.2f}x, {c['per_cpu_s'] / r['per_cpu_s']:.2f}x"
        print(f"{name:<6} {r['rps']:>10.0f} {r['per_cpu_s']:>11.0f} {r['cpu_s']:>7.2f} {r['rss_mib']:>8.1f}   {ratio}")
    print(json.dumps(samples), file=sys.stderr)


if __name__ == "__main__":
    main()
