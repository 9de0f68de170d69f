//! HTTP steps: a request rendered for the user, sent, its values extracted and checked.

use super::body::{multipart, render_json, set_content_type};
use super::poll::PollVerdict;
use super::{Failed, FlowUser, FlowWorkload, UserScope};
use crate::extract::LazyJson;
use crate::plan::{Body, RequestStep};
use crest_engine::Ctx;
use crest_http::{build_request, Call, CallOptions, InvalidRequest, Response};
use crest_model::Outcome;
use std::time::{Duration, Instant};

/// A rendered value made a request that cannot be sent (a line break in a header, say).
#[derive(Debug, thiserror::Error)]
enum RenderError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Invalid(#[from] InvalidRequest),
}

impl FlowWorkload {
    pub(super) async fn request(
        &self,
        r: &RequestStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
    ) -> Result<(), Failed> {
        self.send(r, user, ctx, intended, None).await.map(|_| ())
    }

    /// Sends one request, extracts and checks, and records its sample. For a poll, `verdict`
    /// decides after extraction whether it is done; the request's checks apply only then.
    pub(super) async fn send(
        &self,
        r: &RequestStep,
        user: &mut FlowUser,
        ctx: &Ctx<'_>,
        intended: Option<Instant>,
        verdict: Option<&dyn Fn(&FlowUser) -> PollVerdict>,
    ) -> Result<PollVerdict, Failed> {
        let endpoint = &self.plan.endpoints[r.endpoint];
        let request = {
            let scope = UserScope { user, plan: &self.plan };
            self.render(r, &scope, endpoint.authority())
        };
        let request = match request {
            Ok(bytes) => bytes,
            Err(msg) => {
                // A rendered value made the request invalid (a line break in a header, say).
                let now = Instant::now();
                let sample = crest_model::Sample {
                    name: r.name,
                    segment: 0,
                    user: 0,
                    iteration: 0,
                    intended: ctx.offset(intended.unwrap_or(now)),
                    send_lag: Duration::ZERO,
                    dns: None,
                    connect: None,
                    ttfb: None,
                    total: Duration::ZERO,
                    bytes_sent: 0,
                    bytes_received: 0,
                    messages_sent: 0,
                    messages_received: 0,
                    status: None,
                    outcome: Outcome::CheckFailed,
                };
                ctx.record(sample, Some(&format!("the request could not be built: {msg}")));
                return Err(Failed::default());
            }
        };
        let call = Call {
            request: &request,
            how: &CallOptions {
                head: r.method == "HEAD",
                timeout: r.timeout.unwrap_or(self.plan.timeout),
                connect_timeout: self.plan.connect_timeout,
                keepalive: self.plan.keepalive,
            },
        };
        let needs_response = !r.extract.is_empty() || !r.checks.is_empty();
        let mut response = Response::default();
        let ex = endpoint
            .fetch(
                &mut user.sessions[r.endpoint],
                &call,
                needs_response.then_some(&mut response),
                Some(&mut user.cookies),
            )
            .await;
        let intended = intended.unwrap_or(ex.started).min(ex.started);
        let mut sample = ex.sample(r.name, intended, ctx.offset(intended));
        let transport_ok = matches!(ex.outcome, Outcome::Success | Outcome::Status(_));
        if !transport_ok || (matches!(ex.outcome, Outcome::Status(_)) && !r.checks_status()) {
            ctx.record(sample, ex.error());
            return Err(Failed::default());
        }
        let mut json = LazyJson::default();
        let mut problem: Option<String> = None;
        for (var, e) in &r.extract {
            match e.extract(&response, &mut json) {
                Ok(v) => {
                    user.vars.insert(var.clone(), v);
                }
                Err(why) => {
                    problem = Some(format!("extract {var}: {why}"));
                    break;
                }
            }
        }
        let mut result = PollVerdict::Done;
        if problem.is_none() {
            if let Some(v) = verdict {
                result = v(user);
                if let PollVerdict::GiveUp(why) = &result {
                    problem = Some(why.clone());
                }
            }
        }
        if problem.is_none() && matches!(result, PollVerdict::Done) {
            let took = ex.ended - ex.started;
            problem = r
                .checks
                .iter()
                .find_map(|c| c.check(&response, took, &mut json).err().map(|m| format!("check: {m}")));
        }
        match problem {
            // A failing status stays the primary class even when a check lets it through:
            // the failed check or extraction is usually only its consequence (an error page
            // has no `$.id`), so it is the secondary reason in the example.
            Some(msg) if matches!(ex.outcome, Outcome::Status(_)) => {
                ctx.record(sample, Some(&format_args!("{}; {msg}", ex.outcome.describe())));
                Err(Failed::default())
            }
            Some(msg) => {
                sample.outcome = Outcome::CheckFailed;
                ctx.record(sample, Some(&msg));
                Err(Failed::default())
            }
            None => {
                sample.outcome = Outcome::Success;
                ctx.record(sample, None);
                Ok(result)
            }
        }
    }

    /// The request's bytes for this user.
    fn render(&self, r: &RequestStep, scope: &UserScope<'_>, authority: &str) -> Result<Vec<u8>, RenderError> {
        let mut target = r.path.render(scope);
        if !r.query.is_empty() {
            let mut q = form_urlencoded::Serializer::new(String::new());
            for (k, v) in &r.query {
                q.append_pair(k, &v.render(scope));
            }
            target.push(if target.contains('?') { '&' } else { '?' });
            target.push_str(&q.finish());
        }
        let mut headers: Vec<(String, String)> = Vec::with_capacity(self.plan.headers.len() + r.headers.len() + 1);
        for (n, t) in self.plan.headers.iter().chain(r.headers.iter()) {
            let v = t.render(scope);
            // A step's header replaces a default of the same name.
            match headers.iter_mut().find(|(h, _)| h.eq_ignore_ascii_case(n)) {
                Some(slot) => slot.1 = v,
                None => headers.push((n.clone(), v)),
            }
        }
        let body = match &r.body {
            Body::None => Vec::new(),
            Body::Text(t) => t.render(scope).into_bytes(),
            Body::Bytes(b) => b.clone(),
            Body::Json(j) => {
                if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case("content-type")) {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                serde_json::to_vec(&render_json(j, scope))?
            }
            Body::Form(fields) => {
                let mut f = form_urlencoded::Serializer::new(String::new());
                for (k, v) in fields {
                    f.append_pair(k, &v.render(scope));
                }
                set_content_type(&mut headers, "application/x-www-form-urlencoded".into());
                f.finish().into_bytes()
            }
            Body::Multipart(parts) => {
                let (body, boundary) = multipart(parts, scope);
                set_content_type(&mut headers, format!("multipart/form-data; boundary={boundary}"));
                body
            }
        };
        Ok(build_request(
            &r.method,
            &target,
            authority,
            &headers,
            &body,
            self.plan.keepalive,
        )?)
    }
}
