//! Metrics scraped from a Prometheus text endpoint, chosen by name or pattern.
//!
//! Gauges (and untyped metrics) are recorded as they are; counters only mean something as a
//! rate, so they are recorded as `rate(name)`, per second between two scrapes, as a Prometheus
//! user would graph them. Summary quantiles are gauges with a `quantile` label; histogram buckets
//! are left out (their sum and count can be chosen by name).

use crate::error::{MonitorError, SampleError};
use crate::store::Reading;
use crest_http::{build_request, Call, CallOptions, Endpoint, Response, Session};
use crest_model::monitor::{MetricFilter, PrometheusSpec, SeriesKey, Unit};
use crest_model::plan::TlsOptions;
use crest_model::Outcome;
use prometheus_parse::{Scrape, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The most series one endpoint may add, so that scraping a whole exporter stays readable.
pub(crate) const MAX_SERIES: usize = 200;

/// One endpoint being scraped.
#[derive(Debug)]
pub(crate) struct Scraper {
    endpoint: Endpoint,
    request: Vec<u8>,
    session: Session,
    filter: MetricFilter,
    /// Extra labels on every series (which endpoint, when there are several).
    extra: Vec<(String, String)>,
    /// Counter values at the last scrape, for rates.
    counters: HashMap<SeriesKey, f64>,
    last: Option<Instant>,
}

/// The filter of a spec's metric patterns, or the monitor's error for a bad one.
pub(crate) fn filter(patterns: &[String]) -> Result<MetricFilter, MonitorError> {
    MetricFilter::new(patterns).map_err(|e| MonitorError::Pattern {
        what: "metric pattern",
        pattern: e.pattern,
        reason: e.reason,
    })
}

impl Scraper {
    pub(crate) fn new(spec: &PrometheusSpec, extra: Vec<(String, String)>) -> Result<Self, MonitorError> {
        let address = |e: &dyn std::fmt::Display| MonitorError::Address(e.to_string());
        let (endpoint, target) = Endpoint::parse(&spec.url, &TlsOptions::default()).map_err(|e| address(&e))?;
        let headers = [("Accept".to_string(), "text/plain;version=0.0.4".to_string())];
        let request =
            build_request("GET", &target, endpoint.authority(), &headers, b"", true).map_err(|e| address(&e))?;
        Ok(Scraper {
            endpoint,
            request,
            session: Session::default(),
            filter: filter(&spec.metrics)?,
            extra,
            counters: HashMap::new(),
            last: None,
        })
    }

    /// Scrapes once; `timeout` bounds the whole exchange.
    pub(crate) async fn sample(&mut self, timeout: Duration) -> Result<Vec<Reading>, SampleError> {
        let call = Call {
            request: &self.request,
            how: &CallOptions {
                head: false,
                timeout,
                connect_timeout: timeout,
                keepalive: true,
            },
        };
        let mut response = Response::default();
        let exchange = self.endpoint.call(&mut self.session, &call, Some(&mut response)).await;
        if exchange.outcome != Outcome::Success {
            return Err(SampleError::Scrape {
                outcome: exchange.outcome,
                detail: exchange.error().map(|e| e.to_string()),
            });
        }
        let text = String::from_utf8_lossy(&response.body);
        let now = Instant::now();
        let elapsed = self.last.replace(now).map(|t| now.duration_since(t).as_secs_f64());
        readings(&text, &self.filter, &self.extra, &mut self.counters, elapsed)
    }
}

/// The readings in one page of metrics. `counters` holds the counters' previous values and is
/// updated; `elapsed` is the time since the previous page, when there was one.
pub(crate) fn readings(
    text: &str,
    filter: &MetricFilter,
    extra: &[(String, String)],
    counters: &mut HashMap<SeriesKey, f64>,
    elapsed: Option<f64>,
) -> Result<Vec<Reading>, SampleError> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).map_err(SampleError::NotPrometheus)?;
    // Gauges by name and labels, so that a gauge's ceiling on the same page can be found.
    type Labelled<'a> = (&'a str, std::collections::BTreeMap<&'a String, &'a String>);
    let gauges: HashMap<Labelled, f64> = scrape
        .samples
        .iter()
        .filter_map(|s| match s.value {
            Value::Gauge(v) | Value::Untyped(v) => Some(((s.metric.as_str(), s.labels.iter().collect()), v)),
            _ => None,
        })
        .collect();
    let ceiling = |metric: &str, labels: &prometheus_parse::Labels| {
        ceiling_names(metric)
            .into_iter()
            .find_map(|name| gauges.get(&(name.as_str(), labels.iter().collect())).copied())
            .filter(|c| *c > 0.0)
    };
    let mut out = Vec::new();
    for s in &scrape.samples {
        if !filter.keeps(&s.metric) {
            continue;
        }
        let mut key = SeriesKey::new(s.metric.clone());
        for (k, v) in s.labels.iter().chain(extra.iter().map(|(k, v)| (k, v))) {
            key.labels.insert(k.clone(), v.clone());
        }
        match &s.value {
            &Value::Gauge(v) | &Value::Untyped(v) => out.push(Reading {
                title: key.to_string(),
                unit: unit_of(&s.metric),
                limit: ceiling(&s.metric, &s.labels),
                value: v,
                key,
            }),
            &Value::Counter(v) => {
                let previous = counters.insert(key.clone(), v);
                let (Some(p), Some(dt)) = (previous, elapsed) else {
                    continue;
                };
                // A counter that went down was reset (the process restarted): no rate this time.
                if v < p || dt <= 0.0 {
                    continue;
                }
                let rate_key = SeriesKey {
                    metric: format!("rate({})", s.metric),
                    labels: key.labels,
                };
                out.push(Reading {
                    title: format!("{rate_key} per second"),
                    key: rate_key,
                    unit: Unit::PerSecond,
                    limit: None,
                    value: (v - p) / dt,
                });
            }
            Value::Summary(quantiles) => {
                for q in quantiles {
                    let key = key.clone().with("quantile", q.quantile.to_string());
                    out.push(Reading {
                        title: key.to_string(),
                        key,
                        unit: unit_of(&s.metric),
                        limit: None,
                        value: q.count,
                    });
                }
            }
            Value::Histogram(_) => {}
        }
    }
    Ok(out)
}

/// The names a gauge's ceiling goes by on the same page, with the same labels: `X_max` or
/// `X_limit`, the same with the gauge's `_active`-like suffix replaced (HikariCP's
/// `hikaricp_connections_active` and `hikaricp_connections_max`), and the client libraries'
/// process collector's pairs. A gauge with a ceiling can be named a bottleneck.
fn ceiling_names(metric: &str) -> Vec<String> {
    let mut names = match metric {
        "process_open_fds" => vec!["process_max_fds".to_string()],
        "process_virtual_memory_bytes" => vec!["process_virtual_memory_max_bytes".to_string()],
        _ => Vec::new(),
    };
    let bases = std::iter::once(metric).chain(
        ["_active", "_in_use", "_used", "_busy", "_current", "_open"]
            .iter()
            .filter_map(|suffix| metric.strip_suffix(suffix)),
    );
    for base in bases {
        names.push(format!("{base}_max"));
        names.push(format!("{base}_limit"));
    }
    names
}

fn unit_of(metric: &str) -> Unit {
    if metric.ends_with("_seconds") {
        Unit::Seconds
    } else if metric.ends_with("_bytes") {
        Unit::Bytes
    } else {
        Unit::Number
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "\
# HELP stream_lag_seconds How far the stream is behind.
# TYPE stream_lag_seconds gauge
stream_lag_seconds{table=\"orders\"} 0.25
stream_lag_seconds{table=\"users\"} 1.5
# TYPE rows_total counter
rows_total 1000
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile=\"0.99\"} 0.120
rpc_duration_seconds_sum 10
rpc_duration_seconds_count 100
other_metric 7
";

    #[test]
    fn gauges_are_kept_counters_become_rates_and_filters_apply() {
        let filter = filter(&["stream_lag_seconds".into(), "rows_.*".into(), "rpc_.*".into()]).unwrap();
        let mut counters = HashMap::new();
        let first = readings(PAGE, &filter, &[], &mut counters, None).unwrap();
        let keys: Vec<String> = first.iter().map(|r| r.key.to_string()).collect();
        assert!(
            keys.contains(&r#"stream_lag_seconds{table="orders"}"#.to_string()),
            "{keys:?}"
        );
        assert!(
            keys.contains(&r#"rpc_duration_seconds{quantile="0.99"}"#.to_string()),
            "{keys:?}"
        );
        assert!(!keys.iter().any(|k| k.starts_with("other_metric")), "filtered out");
        assert!(!keys.iter().any(|k| k.starts_with("rate(")), "a rate needs two scrapes");
        let lag = first
            .iter()
            .find(|r| r.key.labels.get("table").map(String::as_str) == Some("users"));
        assert_eq!(lag.map(|r| (r.value, r.unit)), Some((1.5, Unit::Seconds)));

        let second = readings(
            &PAGE.replace("rows_total 1000", "rows_total 1500"),
            &filter,
            &[],
            &mut counters,
            Some(2.0),
        )
        .unwrap();
        let rate = second.iter().find(|r| r.key.metric == "rate(rows_total)").unwrap();
        assert_eq!((rate.value, rate.unit), (250.0, Unit::PerSecond));
        // A reset counter gives no rate rather than a negative one.
        let third = readings(
            &PAGE.replace("rows_total 1000", "rows_total 3"),
            &filter,
            &[],
            &mut counters,
            Some(1.0),
        )
        .unwrap();
        assert!(!third.iter().any(|r| r.key.metric == "rate(rows_total)"));
    }

    #[test]
    fn no_filter_keeps_everything_and_extra_labels_are_added() {
        let extra = vec![("endpoint".to_string(), "a:9100".to_string())];
        let all = readings(PAGE, &filter(&[]).unwrap(), &extra, &mut HashMap::new(), None).unwrap();
        assert!(all.iter().any(|r| r.key.metric == "other_metric"));
        assert!(all
            .iter()
            .all(|r| r.key.labels.get("endpoint").map(String::as_str) == Some("a:9100")));
        assert!(filter(&["(".into()])
            .unwrap_err()
            .to_string()
            .contains("not a valid regular expression"));
    }

    #[test]
    fn a_gauge_with_its_ceiling_on_the_page_carries_it_as_its_limit() {
        let page = "\
# TYPE hikaricp_connections_active gauge
hikaricp_connections_active{pool=\"main\"} 9
hikaricp_connections_active{pool=\"batch\"} 2
# TYPE hikaricp_connections_max gauge
hikaricp_connections_max{pool=\"main\"} 10
# TYPE process_open_fds gauge
process_open_fds 120
# TYPE process_max_fds gauge
process_max_fds 1024
# TYPE queue_depth gauge
queue_depth 7
";
        let all = readings(page, &filter(&[]).unwrap(), &[], &mut HashMap::new(), None).unwrap();
        let limit = |metric: &str, pool: Option<&str>| {
            all.iter()
                .find(|r| r.key.metric == metric && r.key.labels.get("pool").map(String::as_str) == pool)
                .unwrap()
                .limit
        };
        assert_eq!(limit("hikaricp_connections_active", Some("main")), Some(10.0));
        // The ceiling is of the same labels only.
        assert_eq!(limit("hikaricp_connections_active", Some("batch")), None);
        assert_eq!(limit("process_open_fds", None), Some(1024.0));
        assert_eq!(limit("queue_depth", None), None);
    }
}
