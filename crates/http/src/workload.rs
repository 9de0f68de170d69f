//! Quick mode: one repeated HTTP request as an engine workload.

use crate::call::{Call, CallOptions, Session};
use crate::endpoint::{build_request, invalid, Endpoint, InvalidRequest};
use crest_engine::{Ctx, Workload};
use crest_model::plan::{Connection, HttpRequest};
use crest_model::NameId;
use std::fmt;
use std::future::Future;

/// A prepared request: its bytes are built once, so the hot path only writes them.
pub struct HttpWorkload {
    name: NameId,
    endpoint: Endpoint,
    /// The whole request as written on the wire. Holds header values, secrets included: never
    /// show it.
    request: Vec<u8>,
    how: CallOptions,
}

impl fmt::Debug for HttpWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The request bytes are left out: they may hold secrets.
        f.debug_struct("HttpWorkload")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl HttpWorkload {
    /// Prepares `req`, sent as `conn` says; its statistics are grouped under `name`. Resolves
    /// the host once, here.
    pub fn new(req: &HttpRequest, conn: &Connection, name: NameId) -> Result<Self, InvalidRequest> {
        let (endpoint, path) = Endpoint::parse_on(&req.url, &conn.tls, &conn.http, &conn.network)?;
        if !crate::is_token(&req.method) {
            return Err(invalid(format!("{:?} is not a valid HTTP method", req.method)));
        }
        let request = build_request(
            &req.method,
            &path,
            endpoint.authority(),
            &req.headers,
            &req.body,
            conn.keepalive,
        )?;
        Ok(HttpWorkload {
            name,
            endpoint,
            request,
            how: CallOptions {
                head: req.method == "HEAD",
                timeout: conn.timeout,
                connect_timeout: conn.connect_timeout,
                keepalive: conn.keepalive,
            },
        })
    }

    /// The call every iteration makes.
    fn call(&self) -> Call<'_> {
        Call {
            request: &self.request,
            how: &self.how,
        }
    }
}

impl Workload for HttpWorkload {
    type User = Session;

    fn new_user(&self, _id: u64) -> Session {
        Session::default()
    }

    fn prepares(&self) -> bool {
        self.endpoint.opens_ahead(self.how.keepalive)
    }

    async fn prepare<'a>(&'a self, session: &'a mut Session) {
        self.endpoint.open_ahead(session, &self.call()).await;
    }

    // A block rather than an async fn, which would keep a second copy of `ctx` in every
    // user's task for as long as the call waits on its response (issue 35).
    #[allow(clippy::manual_async_fn)]
    fn iterate<'a>(&'a self, session: &'a mut Session, ctx: Ctx<'a>) -> impl Future<Output = ()> + 'a {
        async move {
            let ex = self.endpoint.call(session, &self.call(), None).await;
            let intended = ctx.intended();
            ctx.record(
                ex.sample(self.name, intended, ctx.offset(intended.min(ex.started))),
                ex.error(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoSink;
    impl crest_model::Sink for NoSink {
        fn record(&mut self, _: &crest_model::Sample, _: Option<&dyn fmt::Display>) {}
        fn dropped(&mut self, _: std::time::Duration) {}
        fn tick(&mut self, _: std::time::Duration) {}
    }

    /// The iteration is every user's task but for the engine's loop and the session, so at
    /// 10,000 users its size is memory (issue 35): it adds to the call only the context and
    /// the call's arguments, not second copies of them.
    #[tokio::test]
    async fn an_iteration_is_its_call_and_little_more() {
        let (endpoint, _) = Endpoint::parse("http://127.0.0.1:1/", &Default::default()).unwrap();
        let w = HttpWorkload {
            name: 0,
            endpoint,
            request: Vec::new(),
            how: CallOptions {
                head: false,
                timeout: std::time::Duration::from_secs(1),
                connect_timeout: std::time::Duration::from_secs(1),
                keepalive: true,
            },
        };
        let now = std::time::Instant::now();
        let clock = crest_engine::Clock::new(now, std::rc::Rc::new(std::cell::RefCell::new(NoSink)));
        let mut session = Session::default();
        let call = std::mem::size_of_val(&w.endpoint.call(&mut Session::default(), &w.call(), None));
        let f = w.iterate(&mut session, Ctx::new(&clock, now, 0));
        // 152 bytes over the call (debug build) with copies of the call's options and of the
        // run's start and sink; 88 with the workload's and the engine's lent: the context, the
        // call and the references to them.
        let over = std::mem::size_of_val(&f) - call;
        assert!(over <= 96, "{over}");
    }
}
