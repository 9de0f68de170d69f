// The live page: polls GET /api/state every second for the points it has not seen (all of them
// after a reload, or when the server merged its kept points), and steers through POST /api/*
// with the token from its URL, sent as a header so no cookie can do it for another site.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const auth = token ? { Authorization: "Bearer " + token } : {};
  const $ = (id) => document.getElementById(id);
  let points = [];
  let epoch = null;
  let ended = false;
  // Points complete so far; a point still filling (a merged one) is fetched again.
  let complete = 0;

  const fmt = (v, d) => (v === null || v === undefined ? "-" : Number(v).toFixed(d));
  const width = () => Math.max(320, Math.min(560, (document.body.clientWidth - 60) / 3));
  function chart(el, title, series) {
    return new uPlot(
      {
        title: title,
        width: width(),
        height: 220,
        // Seconds from the start of the run, not dates.
        scales: { x: { time: false } },
        series: [{}].concat(series.map((s) => ({ label: s[0], stroke: s[1], width: 1.5, scale: s[2] || "y" }))),
        axes: [{}, { scale: "y" }].concat(series.some((s) => s[2]) ? [{ scale: "y2", side: 1, grid: { show: false } }] : []),
      },
      [[]].concat(series.map(() => [])),
      $(el)
    );
  }
  const charts = {
    rps: chart("chart-rps", "throughput /s", [["ok", "#2a8a2a"], ["failed", "#c33"], ["iterations", "#555"]]),
    latency: chart("chart-latency", "latency ms", [["p50", "#36c"], ["p90", "#93c"], ["p99", "#c63"], ["max", "#aaa"], ["ttfb p99", "#0aa"]]),
    load: chart("chart-load", "load", [["users", "#333"], ["rate asked", "#36c"], ["in flight", "#c63"], ["dropped/s", "#c33"], ["send lag p99 ms", "#0aa", "y2"]]),
  };
  function draw() {
    const t = points.map((p) => p.t);
    const col = (f) => points.map(f);
    // A second without a request has no latency: a gap, not a zero.
    const lat = (f) => points.map((p) => (p.ok + p.failed > 0 ? f(p) : null));
    charts.rps.setData([t, col((p) => p.ok), col((p) => p.failed), col((p) => p.iterations)]);
    charts.latency.setData([t, lat((p) => p.p50), lat((p) => p.p90), lat((p) => p.p99), lat((p) => p.max), lat((p) => p.ttfb_p99)]);
    charts.load.setData([t, col((p) => p.users), col((p) => p.rate), col((p) => p.in_flight), col((p) => p.dropped), col((p) => p.send_lag_p99)]);
  }
  function rows(id, list, cells, current) {
    const body = $(id).querySelector("tbody");
    body.replaceChildren(
      ...list.map((r, i) => {
        const tr = document.createElement("tr");
        if (i === current) tr.className = "current";
        for (const c of cells(r)) {
          const td = document.createElement("td");
          td.textContent = c;
          tr.appendChild(td);
        }
        return tr;
      })
    );
  }
  const row = (r) => [r.label, r.requests, r.failures, fmt(r.rps, 1), fmt(r.p50, 1), fmt(r.p90, 1), fmt(r.p99, 1), fmt(r.max, 1)];

  // The validity verdict and findings so far, in the reports' words (judged by crest).
  const validity = { valid: "valid so far", client_bound: "crest may be the limit", not_judged: "not judged yet" };
  function verdict(v) {
    if (!v) return;
    $("validity").textContent = validity[v.validity] || v.validity;
    $("validity").className = v.validity;
    $("verdict-at").textContent = "(over the first " + fmt(v.through_s, 0) + " s)";
    $("validity-words").textContent = v.validity_words;
    $("leader").textContent = v.leader || "";
    $("findings").replaceChildren(
      ...v.findings.map((f) => {
        const li = document.createElement("li");
        li.textContent = f.words;
        return li;
      })
    );
  }

  function show(s) {
    points = points.slice(0, s.from).concat(s.points);
    epoch = s.epoch;
    complete = points.length - (s.filling ? 1 : 0);
    const last = points.length ? points[points.length - 1] : null;
    $("command").textContent = s.command_line.join(" ");
    $("step").textContent = s.step ? s.step.label : "-";
    $("users").textContent = s.model === "closed" ? (s.users ?? "-") + (s.users_asked ? " (asked " + s.users_asked[0] + ")" : "") : "-";
    $("rate").textContent = s.rate === null ? "-" : fmt(s.rate, 1) + "/s";
    $("rps").textContent = last ? fmt(last.ok, 1) : "-";
    $("failed").textContent = last ? fmt(last.failed, 1) : "-";
    $("iters").textContent = last && last.iterations !== null ? fmt(last.iterations, 1) : "-";
    $("latency").textContent = last ? [last.p50, last.p90, last.p99, last.max].map((v) => fmt(v, 1)).join(" / ") : "-";
    $("ttfb").textContent = last ? [last.ttfb_p50, last.ttfb_p90, last.ttfb_p99].map((v) => fmt(v, 1)).join(" / ") : "-";
    $("inflight").textContent = last ? fmt(last.in_flight, 1) : "-";
    $("open").textContent = s.model === "open" ? s.dropped + " / " + (last && last.send_lag_p99 !== null ? fmt(last.send_lag_p99, 2) + " ms" : "-") : "-";
    $("totals").textContent = s.total.requests + " / " + s.total.failures;
    $("elapsed").textContent = fmt(s.elapsed_s, 0) + " s";
    const status = s.ended ? "ended" : s.paused ? "paused" : "running";
    $("status").textContent = status;
    $("status").className = status;
    rows("steps", s.steps, row, s.step_index);
    rows("names", s.names, row, -1);
    rows("errors", s.errors, (e) => [e[0], e[1], e[2]], -1);
    rows("monitor", s.monitor, (m) => [m.title, m.shown], -1);
    verdict(s.verdict);
    draw();
    if (s.ended && !ended) {
      ended = true;
      $("ended").hidden = false;
      $("ended-reason").textContent = s.ended.reason;
      $("ended-dir").textContent = s.ended.dir || "";
      if (s.ended.report_html) $("report").srcdoc = s.ended.report_html;
      for (const b of document.querySelectorAll("#control button")) b.disabled = true;
    }
  }

  async function poll() {
    try {
      const q = "from=" + complete + (epoch === null ? "" : "&epoch=" + epoch);
      const r = await fetch("/api/state?" + q, { headers: auth, cache: "no-store" });
      if (r.ok) show(await r.json());
      else $("status").textContent = "HTTP " + r.status;
    } catch (e) {
      // The run's process has ended: what is shown is what it was.
      $("status").textContent = ended ? "ended" : "disconnected";
      return;
    }
    if (!ended) setTimeout(poll, 1000);
  }

  async function post(path, body) {
    $("control-msg").textContent = "";
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, auth),
        body: body ? JSON.stringify(body) : "{}",
      });
      if (!r.ok) $("control-msg").textContent = (await r.json()).error || "HTTP " + r.status;
    } catch (e) {
      $("control-msg").textContent = String(e);
    }
  }
  $("set-users").onclick = () => post("/api/load", { users: Number($("users-input").value), spawn_rate: Number($("spawn-input").value) });
  $("set-rate").onclick = () => post("/api/load", { rate: Number($("rate-input").value) });
  $("pause").onclick = () => post("/api/pause");
  $("resume").onclick = () => post("/api/resume");
  $("stop").onclick = () => post("/api/stop");
  poll();
})();
