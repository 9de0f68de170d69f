//! Quick mode: one repeated HTTP request as an engine workload.

use crate::call::{Call, Session};
use crate::endpoint::{build_request, invalid, Endpoint, InvalidRequest};
use crest_engine::{Ctx, Workload};
use crest_model::plan::{Connection, HttpRequest};
use crest_model::NameId;
use std::fmt;

/// A prepared request: its bytes are built once, so the hot path only writes them.
pub struct HttpWorkload {
    name: NameId,
    endpoint: Endpoint,
    /// The whole request as written on the wire. Holds header values, secrets included: never
    /// show it.
    request: Vec<u8>,
    head: bool,
    timeout: std::time::Duration,
    connect_timeout: std::time::Duration,
    keepalive: bool,
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
            head: req.method == "HEAD",
            timeout: conn.timeout,
            connect_timeout: conn.connect_timeout,
            keepalive: conn.keepalive,
        })
    }

    /// The call every iteration makes.
    fn call(&self) -> Call<'_> {
        Call {
            request: &self.request,
            head: self.head,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            keepalive: self.keepalive,
        }
    }
}

impl Workload for HttpWorkload {
    type User = Session;

    fn new_user(&self, _id: u64) -> Session {
        Session::default()
    }

    fn prepares(&self) -> bool {
        self.endpoint.opens_ahead(self.keepalive)
    }

    async fn prepare<'a>(&'a self, session: &'a mut Session) {
        self.endpoint.open_ahead(session, &self.call()).await;
    }

    async fn iterate<'a>(&'a self, session: &'a mut Session, ctx: Ctx<'a>) {
        let ex = self.endpoint.call(session, &self.call(), None).await;
        let intended = ctx.intended();
        ctx.record(
            ex.sample(self.name, intended, ctx.offset(intended.min(ex.started))),
            ex.error(),
        );
    }
}
