//! Writing a finished run: its rows in one transaction, after the schema is brought up to date.

use crate::connect::{connect, shown};
use crate::migrate::migrate_on;
use crate::{on_own_thread, rows, StoreError};
use crest_analysis::Analysis;
use crest_model::results::Results;

/// Writes the run (`results`, and `analysis`, the analysis of them the reports show) to the
/// store at `url`, migrating the store first; returns the run's id there. All or nothing.
pub fn write_run(url: &str, results: &Results, analysis: &Analysis) -> Result<i64, StoreError> {
    let document = serde_json::to_string(results).map_err(|e| StoreError::Query {
        url: shown(url),
        message: format!("cannot serialise the results: {e}"),
    })?;
    let run = rows::Run::of(results, analysis);
    let steps = rows::steps(analysis);
    let answers = rows::answers(analysis);
    let series = rows::series(results, analysis);
    on_own_thread(&shown(url), || async {
        let mut s = connect(url).await?;
        migrate_on(&mut s, None).await?;
        let shown = s.shown.clone();
        let err = |e: tokio_postgres::Error| StoreError::Query {
            url: shown.clone(),
            message: crate::connect::words(&e),
        };
        let tx = s.client.transaction().await.map_err(err)?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO crest.runs (started_at, label, commit, branch, dirty, tags, unit,
                     duration_s, ended_by, throughput_per_s, throughput_rps, requests, successes,
                     failures, error_rate, p50_ms, p95_ms, p99_ms, optimal_per_s, limit_per_s,
                     bottleneck, bottleneck_kind, thresholds_passed, crest_version, results)
                 VALUES ($1::text::timestamptz, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10,
                     $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
                     $25::text::jsonb)
                 RETURNING id",
                &[
                    &run.started_at,
                    &run.label,
                    &run.commit,
                    &run.branch,
                    &run.dirty,
                    &run.tags,
                    &run.unit,
                    &run.duration_s,
                    &run.ended_by,
                    &run.throughput_per_s,
                    &run.throughput_rps,
                    &run.requests,
                    &run.successes,
                    &run.failures,
                    &run.error_rate,
                    &run.p50_ms,
                    &run.p95_ms,
                    &run.p99_ms,
                    &run.optimal_per_s,
                    &run.limit_per_s,
                    &run.bottleneck,
                    &run.bottleneck_kind,
                    &run.thresholds_passed,
                    &run.crest_version,
                    &document,
                ],
            )
            .await
            .map_err(err)?
            .get(0);
        for st in &steps {
            tx.execute(
                "INSERT INTO crest.steps (run_id, step, kind, users, rate, duration_s, steady_s,
                     requests, failures, throughput_rps, success_per_s, p50_ms, p95_ms, p99_ms)
                 VALUES ($1, $2, $3::text::jsonb, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                &[
                    &id,
                    &st.step,
                    &st.kind,
                    &st.users,
                    &st.rate,
                    &st.duration_s,
                    &st.steady_s,
                    &st.requests,
                    &st.failures,
                    &st.throughput_rps,
                    &st.success_per_s,
                    &st.p50_ms,
                    &st.p95_ms,
                    &st.p99_ms,
                ],
            )
            .await
            .map_err(err)?;
        }
        for (position, a) in answers.iter().enumerate() {
            tx.execute(
                "INSERT INTO crest.answers (run_id, position, answer, name, passed, value, step,
                     users, rate, per_s, error_rate, p99_ms, why)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                &[
                    &id,
                    &(position as i32),
                    &a.answer,
                    &a.name,
                    &a.passed,
                    &a.value,
                    &a.step,
                    &a.users,
                    &a.rate,
                    &a.per_s,
                    &a.error_rate,
                    &a.p99_ms,
                    &a.why,
                ],
            )
            .await
            .map_err(err)?;
        }
        // One statement for the whole series: a long run has thousands of seconds.
        tx.execute(
            "INSERT INTO crest.series (run_id, at, requests, successes, failures, p50_ms, p95_ms, p99_ms)
             SELECT $1, $2::text::timestamptz + make_interval(secs => u.t_s),
                    u.requests, u.successes, u.failures, u.p50_ms, u.p95_ms, u.p99_ms
             FROM unnest($3::float8[], $4::int8[], $5::int8[], $6::int8[],
                         $7::float8[], $8::float8[], $9::float8[])
                  AS u(t_s, requests, successes, failures, p50_ms, p95_ms, p99_ms)",
            &[
                &id,
                &run.started_at,
                &series.t_s,
                &series.requests,
                &series.successes,
                &series.failures,
                &series.p50_ms,
                &series.p95_ms,
                &series.p99_ms,
            ],
        )
        .await
        .map_err(err)?;
        tx.commit().await.map_err(err)?;
        Ok(id)
    })
}
