//! Metrics scraped from a Prometheus text endpoint, chosen by name or pattern.
//!
//! Gauges (and untyped metrics) are recorded as they are; counters only mean something as a
//! rate, so they are recorded as `rate(name)`, per second between two scrapes, as a Prometheus
//! user would graph them. Summary quantiles are gauges with a `quantile` label; histogram buckets
//! are left out (their sum and count can be chosen by name).

use crate::error::{MonitorError, SampleError};
use crate::store::Reading;
use crest_http::{build_request, Call, Endpoint, Response, Session};
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
            head: false,
            timeout,
            connect_timeout: timeout,
            keepalive: true,
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
    let mut out = Vec::new();
    for s in scrape.samples {
        if !filter.keeps(&s.metric) {
            continue;
        }
        let mut key = SeriesKey::new(s.metric.clone());
        for (k, v) in s.labels.iter().chain(extra.iter().map(|(k, v)| (k, v))) {
            key.labels.insert(k.clone(), v.clone());
        }
        match s.value {
            Value::Gauge(v) | Value::Untyped(v) => out.push(Reading {
                title: key.to_string(),
                unit: unit_of(&s.metric),
                limit: None,
                value: v,
                key,
            }),
            Value::Counter(v) => {
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
}
