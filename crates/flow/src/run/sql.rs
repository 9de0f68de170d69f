//! SQL steps: statements on the user's own database connection.

use super::{Failed, FlowUser, FlowWorkload, UserScope};
use crest_engine::Ctx;
use crest_model::Outcome;
use std::time::{Duration, Instant};

impl FlowWorkload {
    /// Runs an SQL step on the user's connection, opening it if needed.
    pub(super) async fn sql(
        &self,
        s: &crate::plan::SqlStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        let started = Instant::now();
        let intended = intended.unwrap_or(started).min(started);
        let sample = |name, total: Duration, connect: Option<Duration>, outcome| crest_model::Sample {
            name,
            segment: 0,
            user: 0,
            iteration: 0,
            intended: ctx.offset(intended),
            send_lag: started - intended,
            dns: None,
            connect,
            ttfb: None,
            total,
            bytes_sent: 0,
            bytes_received: 0,
            messages_sent: 0,
            messages_received: 0,
            status: None,
            outcome,
        };
        let mut connect = None;
        if user.pg.as_ref().is_none_or(crest_pg::PgSession::is_closed) {
            let Some(target) = &self.plan.database else {
                ctx.record(
                    sample(s.name, Duration::ZERO, None, Outcome::SqlError),
                    Some(&"no database configured"),
                );
                return Err(Failed::default());
            };
            match target.connect().await {
                Ok(session) => {
                    connect = Some(started.elapsed());
                    user.pg = Some(session);
                }
                Err(e) => {
                    ctx.record(sample(s.name, Instant::now() - intended, None, e.outcome), Some(&e));
                    return Err(Failed::default());
                }
            }
        }
        let result = self.sql_statements(s, user, ctx, intended).await;
        let total = Instant::now() - intended;
        match result {
            Ok(()) => {
                ctx.record(sample(s.name, total, connect, Outcome::Success), None);
                Ok(())
            }
            Err((outcome, message)) => {
                if matches!(outcome, Outcome::SqlConnectionLost) {
                    user.pg = None;
                }
                ctx.record(sample(s.name, total, connect, outcome), Some(&message));
                Err(Failed::default())
            }
        }
    }

    async fn sql_statements(
        &self,
        s: &crate::plan::SqlStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Instant,
    ) -> Result<(), (Outcome, String)> {
        let params: Vec<Vec<String>> = {
            let scope = UserScope { user, plan: &self.plan };
            s.statements
                .iter()
                .map(|st| st.params.iter().map(|p| p.render(&scope)).collect())
                .collect()
        };
        let Some(pg) = user.pg.as_mut() else {
            return Err((Outcome::SqlConnectionLost, "no connection".into()));
        };
        // The step's sample is its one request; the server holds it from its first statement.
        let _sent = crest_engine::Unanswered::sent();
        if s.transaction {
            pg.simple("BEGIN").await.map_err(|e| (e.outcome, e.message))?;
        }
        let mut last = None;
        for (st, p) in s.statements.iter().zip(&params) {
            let t0 = Instant::now();
            let r = pg.run(&st.query, p).await;
            if s.transaction {
                // Each statement of a transaction is also recorded on its own.
                let outcome = r.as_ref().map_or_else(|e| e.outcome, |_| Outcome::Success);
                let one = crest_model::Sample {
                    name: st.name,
                    segment: 0,
                    user: 0,
                    iteration: 0,
                    intended: ctx.offset(t0),
                    send_lag: Duration::ZERO,
                    dns: None,
                    connect: None,
                    ttfb: None,
                    total: t0.elapsed(),
                    bytes_sent: 0,
                    bytes_received: 0,
                    messages_sent: 0,
                    messages_received: 0,
                    status: None,
                    outcome,
                };
                ctx.record(one, r.as_ref().err().map(|e| e as &dyn std::fmt::Display));
            }
            match r {
                Ok(v) => last = Some(v),
                Err(e) => {
                    if s.transaction {
                        let _ = pg.simple("ROLLBACK").await;
                    }
                    return Err((e.outcome, e.message));
                }
            }
        }
        if s.transaction {
            pg.simple("COMMIT").await.map_err(|e| (e.outcome, e.message))?;
        }
        let _ = intended;
        let Some(last) = last else { return Ok(()) };
        for c in &s.checks {
            let ok = match c {
                crate::plan::SqlCheck::Rows(n) => (last.rows == *n)
                    .then_some(())
                    .ok_or_else(|| format!("{} rows, expected {n}", last.rows)),
                crate::plan::SqlCheck::RowsMin(n) => (last.rows >= *n)
                    .then_some(())
                    .ok_or_else(|| format!("{} rows, expected at least {n}", last.rows)),
                crate::plan::SqlCheck::Value(col, want) => {
                    match last.returned.first().map(|row| crest_pg::value(row, col)) {
                        Some(Ok(Some(v))) if v == *want => Ok(()),
                        Some(Ok(_)) if crest_model::redact::is_secret_name(col) => Err(format!(
                            "{col} is not the expected value (neither is shown: the name looks secret)"
                        )),
                        Some(Ok(v)) => Err(format!("{col} is {v:?}, expected {want:?}")),
                        Some(Err(m)) => Err(m.to_string()),
                        None => Err(format!("no row to read {col} from")),
                    }
                }
            };
            ok.map_err(|m| (Outcome::CheckFailed, format!("check: {m}")))?;
        }
        for (var, col) in &s.extract {
            let v = match last.returned.first().map(|row| crest_pg::value(row, col)) {
                Some(Ok(Some(v))) => v,
                Some(Ok(None)) => return Err((Outcome::CheckFailed, format!("extract {var}: {col} is NULL"))),
                Some(Err(m)) => return Err((Outcome::CheckFailed, format!("extract {var}: {m}"))),
                None => return Err((Outcome::CheckFailed, format!("extract {var}: no row returned"))),
            };
            user.vars.insert(var.clone(), v);
        }
        Ok(())
    }
}
