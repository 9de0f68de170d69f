#!/usr/bin/env python3
"""crest's gRPC and WebSocket steps against peers on one server each (the tests' own servers):
unary gRPC calls (crest, ghz, k6) and WebSocket echoes (crest, k6), every user with a connection
of its own, in messages answered per generator CPU-second. Called by streams.sh."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import NGINX_CORE, PRIORITY, scratch, timed  # noqa: E402

GRPC_PORT = 18551
WS_PORT = 18552
PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "testkit", "src", "grpc.rs")
# Each WebSocket iteration is this many request/reply exchanges on one connection.
ECHOES = 1000


def echo_proto(dir_):
    """The test service's .proto, as the tests' server has it (ECHO_PROTO in testkit)."""
    text = open(PROTO).read()
    start = text.index('r#"syntax') + 3
    path = os.path.join(dir_, "echo.proto")
    with open(path, "w") as f:
        f.write(text[start:text.index('"#;', start)])
    return path


def start(exe, port):
    p = subprocess.Popen(PRIORITY + ["taskset", "-c", NGINX_CORE, exe, str(port)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if "listening" not in line:
        raise RuntimeError(f"{exe} did not start: {line}")
    return p


def stop(p):
    p.stdin.close()
    out = p.stdout.read()
    p.wait(timeout=10)
    return out.strip()


def crest(exe, scenario, secs, users, work):
    out, cpu, rss = timed([exe, "run", scenario, "-c", str(users), "-d", f"{secs}s", "--threads", "1",
                           "--quiet", "--summary-json", "-", "--out", scratch("crest-bench-", dir=work)])
    s = json.loads(out)
    if s["failures"]:
        raise RuntimeError(f"crest: {s['failures']} failures: {s['errors']}")
    return s["messages"]["received"], s["duration_s"], cpu, rss


def k6(script, secs, users, metric, work):
    summary = os.path.join(work, "k6.json")
    _, cpu, rss = timed(["k6", "run", "--quiet", "--no-usage-report", "--vus", str(users), "--duration", f"{secs}s",
                         "--summary-export", summary, script])
    m = json.load(open(summary))["metrics"]
    failed = m.get("checks", {}).get("fails", 0)
    if failed:
        raise RuntimeError(f"k6: {failed} failed checks")
    # k6 lets iterations in flight finish after the duration: the rate is approximate, the
    # messages per CPU-second are not.
    return m[metric]["count"], secs, cpu, rss


def ghz(proto, secs, users):
    out, cpu, rss = timed(["ghz", "--insecure", "--proto", proto, "--call", "test.Echo/Say", "-d", '{"text":"hello"}',
                           "-c", str(users), "--connections", str(users), "-z", f"{secs}s", "--format", "json",
                           f"127.0.0.1:{GRPC_PORT}"])
    r = json.loads(out)
    ok = r["statusCodeDistribution"].get("OK", 0)
    # ghz ends each connection's call in flight at the deadline as Unavailable ("transport is
    # closing"): at most one per connection; anything else is a failure.
    if r["count"] - ok > users:
        raise RuntimeError(f"ghz: {r['statusCodeDistribution']}")
    return ok, r["total"] / 1e9, cpu, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crest", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    work = scratch("crest-bench-streams-")
    proto = echo_proto(work)
    grpc_yaml = os.path.join(work, "grpc.yaml")
    with open(grpc_yaml, "w") as f:
        f.write(f"target: grpc://127.0.0.1:{GRPC_PORT}\nprotos: [echo.proto]\nsteps:\n"
                "  - grpc: {call: test.Echo/Say, name: say, message: {text: hello}}\nload: {users: 1, duration: 1s}\n")
    ws_yaml = os.path.join(work, "ws.yaml")
    with open(ws_yaml, "w") as f:
        f.write(f"target: ws://127.0.0.1:{WS_PORT}\nsteps:\n  - loop:\n      times: {ECHOES}\n      steps:\n"
                "        - ws: {name: echo, send: hello, until: {count: 1}}\n  - ws: {name: close, close: 1000}\n"
                "load: {users: 1, duration: 1s}\n")
    k6_grpc = os.path.join(work, "grpc.js")
    with open(k6_grpc, "w") as f:
        f.write(f"""import grpc from 'k6/net/grpc';
const client = new grpc.Client();
client.load(['{work}'], 'echo.proto');
export default function () {{
  if (__ITER == 0) {{ client.connect('127.0.0.1:{GRPC_PORT}', {{ plaintext: true }}); }}
  const r = client.invoke('test.Echo/Say', {{ text: 'hello' }});
  if (r.status !== grpc.StatusOK) {{ throw new Error('status ' + r.status); }}
}}
""")
    k6_ws = os.path.join(work, "ws.js")
    with open(k6_ws, "w") as f:
        f.write(f"""import ws from 'k6/ws';
export default function () {{
  ws.connect('ws://127.0.0.1:{WS_PORT}/', null, function (socket) {{
    let n = 0;
    socket.on('open', () => socket.send('hello'));
    socket.on('message', () => {{ n++; if (n >= {ECHOES}) {{ socket.close(); }} else {{ socket.send('hello'); }} }});
  }});
}}
""")
    crests = [("crest", a.crest)] + [tuple(v.split("=", 1)) for v in a.variant]
    cases = {
        "gRPC unary": [(n, lambda e=e: crest(e, grpc_yaml, a.seconds, a.users, work)) for n, e in crests]
        + [("ghz", lambda: ghz(proto, a.seconds, a.users)),
           ("k6", lambda: k6(k6_grpc, a.seconds, a.users, "iterations", work))],
        "WebSocket echo": [(n, lambda e=e: crest(e, ws_yaml, a.seconds, a.users, work)) for n, e in crests]
        + [("k6", lambda: k6(k6_ws, a.seconds, a.users, "ws_msgs_received", work))],
    }
    servers = [start(os.path.join(a.examples, "grpc-echo"), GRPC_PORT),
               start(os.path.join(a.examples, "ws-echo"), WS_PORT)]
    samples = {}
    try:
        for _ in range(a.rounds):
            for case, tools in cases.items():
                for tool, go in tools:
                    if tool in ("ghz", "k6") and not shutil.which(tool):
                        continue
                    try:
                        n, d, cpu, rss = go()
                    except Exception as e:  # noqa: BLE001 - a peer's failure is reported, not fatal
                        print(f"{tool} {case}: {e}", file=sys.stderr)
                        continue
                    samples.setdefault((case, tool), []).append(
                        {"per_s": n / d, "per_cpu_s": n / cpu if cpu > 0 else float("nan"), "rss_mib": rss / 1024})
    finally:
        counts = [stop(s) for s in servers]
    print(f"server on core {NGINX_CORE}, each generator on the other core; {a.users} users, each with a "
          f"connection of its own; {a.seconds} s each; median of {a.rounds} rounds")
    print(f"servers' counts: {'; '.join(c.splitlines()[-1] for c in counts)}")

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    print(f"{'case':<16} {'tool':<8} {'msg/s':>9} {'msg/CPU-s':>10} {'RSS MiB':>8}  {'crest/it':>8}  msg/CPU-s per round (k)")
    for case, tools in cases.items():
        rows = {t: {k: median([s[k] for s in samples[(case, t)]]) for k in ("per_s", "per_cpu_s", "rss_mib")}
                for t, _ in tools if samples.get((case, t))}
        for t, r in rows.items():
            ratio = f"{rows['crest']['per_cpu_s'] / r['per_cpu_s']:.2f}x" if t != "crest" and "crest" in rows else ""
            per_round = "/".join(f"{s['per_cpu_s'] / 1000:.1f}" for s in samples[(case, t)])
            print(f"{case:<16} {t:<8} {r['per_s']:>9.0f} {r['per_cpu_s']:>10.0f} {r['rss_mib']:>8.1f}  {ratio:>8}  {per_round}")
    print(json.dumps({f"{k[0]}/{k[1]}": v for k, v in samples.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
