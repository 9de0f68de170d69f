//! `/metrics`: the run so far in the Prometheus text format, named as Prometheus users expect
//! (a `crest_` prefix, base units, `_total` on counters). Its counters are the sums of the
//! intervals published so far, so at the end of the run they equal results.json's.

use crate::hub::{Hub, Kept};
use crest_engine::Control;
use std::fmt::Write;
use std::sync::Arc;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS_S: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A label value, escaped as the text format asks.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A metric name made of what Prometheus allows.
fn metric_name(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect()
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The scrape.
pub fn render(hub: &Hub) -> String {
    let control = hub.control();
    let model = hub.model();
    let k = hub.kept();
    let mut out = String::new();
    requests(&mut out, &k);
    totals(&mut out, &k);
    run_state(&mut out, &k, &control, &model);
    process(&mut out);
    monitored(&mut out, &k);
    out
}

/// Requests and failures by name and outcome, and the latency histogram.
fn requests(out: &mut String, k: &Kept) {
    head(
        out,
        "crest_requests_total",
        "counter",
        "Requests ended, by name and outcome.",
    );
    for ((name, outcome), t) in &k.by_name_outcome {
        let _ = writeln!(
            out,
            "crest_requests_total{{name=\"{}\",outcome=\"{}\"}} {}",
            esc(name),
            esc(outcome),
            t.count
        );
    }
    head(
        out,
        "crest_request_failures_total",
        "counter",
        "Requests that failed, by name and outcome.",
    );
    for ((name, outcome), t) in k.by_name_outcome.iter().filter(|(_, t)| t.failures > 0) {
        let _ = writeln!(
            out,
            "crest_request_failures_total{{name=\"{}\",outcome=\"{}\"}} {}",
            esc(name),
            esc(outcome),
            t.failures
        );
    }
    let h = k.total.latency.histogram();
    head(
        out,
        "crest_request_duration_seconds",
        "histogram",
        "Time of each request, from its intended start.",
    );
    for le in BUCKETS_S {
        let n = if h.is_empty() {
            0
        } else {
            h.count_between(0, (le * 1e6) as u64)
        };
        let _ = writeln!(out, "crest_request_duration_seconds_bucket{{le=\"{le}\"}} {n}");
    }
    let _ = writeln!(
        out,
        "crest_request_duration_seconds_bucket{{le=\"+Inf\"}} {}",
        k.total.count
    );
    // The recorded histograms keep values, not their exact sum: mean times count.
    let sum = if h.is_empty() {
        0.0
    } else {
        h.mean() * h.len() as f64 / 1e6
    };
    let _ = writeln!(out, "crest_request_duration_seconds_sum {sum}");
    let _ = writeln!(out, "crest_request_duration_seconds_count {}", k.total.count);
}

/// Bytes, iterations and drops so far.
fn totals(out: &mut String, k: &Kept) {
    head(
        out,
        "crest_sent_bytes_total",
        "counter",
        "Bytes sent by requests that ended.",
    );
    let _ = writeln!(out, "crest_sent_bytes_total {}", k.total.bytes_sent);
    head(
        out,
        "crest_received_bytes_total",
        "counter",
        "Bytes received by requests that ended.",
    );
    let _ = writeln!(out, "crest_received_bytes_total {}", k.total.bytes_received);
    head(
        out,
        "crest_messages_sent_total",
        "counter",
        "Messages sent on message streams (WebSocket) by requests that ended.",
    );
    let _ = writeln!(out, "crest_messages_sent_total {}", k.messages.0);
    head(
        out,
        "crest_messages_received_total",
        "counter",
        "Messages received on message streams (WebSocket, server-sent events, gRPC) by requests that ended.",
    );
    let _ = writeln!(out, "crest_messages_received_total {}", k.messages.1);
    head(
        out,
        "crest_iterations_total",
        "counter",
        "Scenario iterations that ended.",
    );
    let _ = writeln!(out, "crest_iterations_total {}", k.iterations);
    head(
        out,
        "crest_dropped_arrivals_total",
        "counter",
        "Open model: arrivals dropped at the cap on iterations in flight.",
    );
    let _ = writeln!(out, "crest_dropped_arrivals_total {}", k.dropped);
}

/// What the run is doing now: its users or rate, its send lag, whether it is paused.
fn run_state(out: &mut String, k: &Kept, control: &Option<Arc<Control>>, model: &Option<String>) {
    let last = k.parts.last();
    if model.as_deref() == Some("closed") {
        head(out, "crest_users", "gauge", "Virtual users running.");
        let _ = writeln!(out, "crest_users {}", control.as_ref().map_or(0, |c| c.users_now()));
    }
    let rate = control
        .as_ref()
        .and_then(|c| c.rate_asked())
        .or(last.and_then(|p| p.start.target_rps));
    if let Some(r) = rate {
        head(
            out,
            "crest_arrival_rate_per_second",
            "gauge",
            "Open model: arrivals per second asked for.",
        );
        let _ = writeln!(out, "crest_arrival_rate_per_second {r}");
    }
    if let Some(lag) = k.last_send_lag_p99_s() {
        head(
            out,
            "crest_send_lag_p99_seconds",
            "gauge",
            "Open model: send lag p99 in the last interval.",
        );
        let _ = writeln!(out, "crest_send_lag_p99_seconds {lag}");
    }
    head(out, "crest_paused", "gauge", "1 while the run is paused by hand.");
    let _ = writeln!(
        out,
        "crest_paused {}",
        u8::from(control.as_ref().is_some_and(|c| c.paused()))
    );
}

/// crest's own CPU and memory.
fn process(out: &mut String) {
    head(
        out,
        "crest_process_cpu_seconds_total",
        "counter",
        "CPU time crest has used.",
    );
    let _ = writeln!(out, "crest_process_cpu_seconds_total {}", crest_monitor::own::cpu_s());
    head(
        out,
        "crest_process_resident_memory_bytes",
        "gauge",
        "crest's resident memory.",
    );
    let _ = writeln!(
        out,
        "crest_process_resident_memory_bytes {}",
        crest_monitor::own::rss_bytes()
    );
}

/// The monitor's latest values, one gauge per metric.
fn monitored(out: &mut String, k: &Kept) {
    let mut named = std::collections::BTreeSet::new();
    for m in k.monitor.values() {
        let name = format!("crest_monitor_{}", metric_name(&m.key.metric));
        if named.insert(name.clone()) {
            head(
                out,
                &name,
                "gauge",
                &format!("Monitored: {} ({}).", m.title.replace('\n', " "), m.unit),
            );
        }
        let labels: Vec<String> = m
            .key
            .labels
            .iter()
            .map(|(l, v)| format!("{}=\"{}\"", metric_name(l), esc(v)))
            .collect();
        let _ = writeln!(out, "{name}{{{}}} {}", labels.join(","), m.value);
    }
}
