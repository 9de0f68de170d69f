//! What a request is beyond one exchange: redirects followed, cookies kept, bodies decoded.
//!
//! Layered over [`Endpoint::call`] so that quick mode, which uses none of it, keeps the bare
//! exchange on its hot path. A followed redirect is timed as one request (from the first
//! byte sent to the last byte of the final response) and each hop is listed in the exchange.

use crate::call::{Call, CallOptions, Exchange, Session};
use crate::cookies::CookieJar;
use crate::decode::{self, ACCEPT_ENCODING};
use crate::endpoint::Endpoint;
use crate::exchange::Response;
use crate::Detail;
use crest_model::Outcome;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest `Location` followed. URLs past 8 KiB are refused by most servers and proxies;
/// a server whose `Location` grows at each hop would otherwise grow every user's memory.
const MAX_LOCATION: usize = 8 * 1024;

/// One redirect followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The 3xx status.
    pub status: u16,
    /// Where it pointed: path and query on the same server, or a whole URL on another.
    pub location: String,
}

impl Endpoint {
    /// Sends `call` like [`Endpoint::call`], then follows redirects up to the endpoint's limit
    /// (a redirect to another server opens a connection there, and sends it neither
    /// `Authorization` nor this server's cookies), keeps and sends cookies in
    /// `jar` when given and the endpoint keeps cookies, and decodes a compressed body kept in
    /// `keep`.
    pub async fn fetch(
        &self,
        session: &mut Session,
        call: &Call<'_>,
        keep: Option<&mut Response>,
        mut jar: Option<&mut CookieJar>,
    ) -> Exchange {
        let opts = self.options;
        if !opts.cookies {
            jar = None;
        }
        if opts.max_redirects == 0 && !opts.compression && jar.is_none() {
            return self.call(session, call, keep).await;
        }
        let mut own = Response::default();
        let kept = keep.is_some();
        let resp = keep.unwrap_or(&mut own);
        let Some(mut req) = Parsed::new(call.request) else {
            return self.call(session, call, Some(resp)).await;
        };
        // The timeout bounds the whole chain, not each hop: a redirect loop must end in time.
        let deadline = Instant::now() + call.timeout;
        let mut total: Option<Exchange> = None;
        let mut hops = Vec::new();
        // The server the current hop goes to: this one until a redirect leads elsewhere.
        let mut other: Option<Arc<Endpoint>> = None;
        loop {
            let ep: &Endpoint = other.as_deref().unwrap_or(self);
            let cookie = jar.as_deref().and_then(|j| j.header(&ep.host, &req.target, ep.https()));
            let bytes = req.render(cookie.as_deref(), opts.compression);
            let hop_call = Call {
                request: &bytes,
                how: &CallOptions {
                    head: req.method == "HEAD",
                    timeout: deadline.saturating_duration_since(Instant::now()),
                    ..*call.how
                },
            };
            let hop_session = match &other {
                None => &mut *session,
                Some(o) => user_session(session, o),
            };
            let ex = ep.call(hop_session, &hop_call, Some(resp)).await;
            let ok = matches!(ex.outcome, Outcome::Success | Outcome::Status(_));
            let ex = merge(total.take(), ex);
            if !ok {
                total = Some(ex);
                break;
            }
            if let Some(j) = jar.as_deref_mut() {
                let set = resp
                    .headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
                    .map(|(_, v)| v.as_str());
                j.store(&ep.host, &req.target, set);
            }
            let status = resp.status;
            let redirect = matches!(status, 301 | 302 | 303 | 307 | 308) && opts.max_redirects > 0;
            let location = resp.header("location").filter(|_| redirect);
            if location.is_some_and(|l| l.len() > MAX_LOCATION) {
                total = Some(stopped(
                    ex,
                    Outcome::Protocol,
                    "a redirect's Location is longer than 8 KiB",
                ));
                break;
            }
            let next = location.and_then(|loc| ep.next_hop(&req.target, loc));
            let Some(next) = next else {
                total = Some(ex);
                break;
            };
            if hops.len() as u32 >= opts.max_redirects {
                total = Some(stopped(ex, Outcome::TooManyRedirects, "stopped at the redirect limit"));
                break;
            }
            let (target, shown) = match next {
                Next::Here(target) => (target.clone(), target),
                Next::Elsewhere { base, target } => match self.other(&base) {
                    Ok(e) => {
                        req.leave_for(e.authority());
                        other = Some(e);
                        (target.clone(), format!("{base}{target}"))
                    }
                    Err(_) => {
                        total = Some(stopped(
                            ex,
                            Outcome::Other,
                            "a redirect led to a server that cannot be reached",
                        ));
                        break;
                    }
                },
            };
            hops.push(Hop {
                status,
                location: shown,
            });
            req.redirect(status, target);
            if Instant::now() >= deadline {
                total = Some(stopped(
                    ex,
                    Outcome::Timeout,
                    "request timed out while following redirects",
                ));
                break;
            }
            total = Some(ex);
        }
        let Some(mut ex) = total else {
            return self.call(session, call, None).await;
        };
        ex.redirects = hops;
        if ex.outcome.is_success() || matches!(ex.outcome, Outcome::Status(_)) {
            match decode::decode(resp) {
                Ok(n) => ex.decoded_body = n,
                Err(_) => {
                    ex.outcome = Outcome::Protocol;
                    ex.set_error(Detail::Text("the response body could not be decoded"));
                }
            }
        }
        if !kept {
            *resp = Response::default();
        }
        ex
    }

    /// Where a `Location` leads from `current` on this server.
    fn next_hop(&self, current: &str, location: &str) -> Option<Next> {
        let scheme = if self.https() { "https" } else { "http" };
        let base = url::Url::parse(&format!("{scheme}://{}{current}", self.authority())).ok()?;
        let next = base.join(location).ok()?;
        let target = crest_model::address::path_and_query(&next).to_string();
        let same = next.scheme() == base.scheme()
            && next.host_str() == base.host_str()
            && next.port_or_known_default() == base.port_or_known_default();
        if same {
            return Some(Next::Here(target));
        }
        if !matches!(next.scheme(), "http" | "https") {
            return None;
        }
        Some(Next::Elsewhere {
            base: format!("{}://{}", next.scheme(), crest_model::address::authority(&next)),
            target,
        })
    }
}

/// Where a redirect leads.
enum Next {
    /// This path and query on the same server.
    Here(String),
    /// Another server (`scheme://authority`) and the path and query there.
    Elsewhere { base: String, target: String },
}

/// The user's session with `other`, made on the first redirect there.
fn user_session<'s>(session: &'s mut Session, other: &Arc<Endpoint>) -> &'s mut Session {
    let others = &mut session.rare.get_or_insert_with(Default::default).others;
    let i = match others.iter().position(|(e, _)| Arc::ptr_eq(e, other)) {
        Some(i) => i,
        None => {
            others.push((other.clone(), Session::default()));
            others.len() - 1
        }
    };
    &mut others[i].1
}

/// The chain ends at `ex`, the last hop's exchange, with `outcome` for `why`: the response
/// that arrived is not the request's result.
fn stopped(mut ex: Exchange, outcome: Outcome, why: &'static str) -> Exchange {
    ex.outcome = outcome;
    ex.status = None;
    ex.set_error(Detail::Text(why));
    ex
}

/// A hop's exchange folded into the request's: one start, one end, the bytes and connects of
/// every hop, and the last hop's response.
fn merge(total: Option<Exchange>, hop: Exchange) -> Exchange {
    let Some(t) = total else { return hop };
    Exchange {
        started: t.started,
        connect: sum(t.connect, hop.connect),
        dns: sum(t.dns, hop.dns),
        bytes_sent: t.bytes_sent + hop.bytes_sent,
        bytes_received: t.bytes_received + hop.bytes_received,
        ..hop
    }
}

/// Two hops' times for one phase: either's, or both added.
fn sum(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// A request's parts, so that redirects and cookies can change them.
struct Parsed {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Parsed {
    fn new(request: &[u8]) -> Option<Parsed> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        let len = match req.parse(request) {
            Ok(httparse::Status::Complete(len)) => len,
            _ => return None,
        };
        Some(Parsed {
            method: req.method?.to_string(),
            target: req.path?.to_string(),
            headers: req
                .headers
                .iter()
                .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
                .collect(),
            body: request[len..].to_vec(),
        })
    }

    /// RFC 9110 15.4: 303 turns into GET (HEAD stays HEAD); 301 and 302 turn a POST into a
    /// GET, as every browser does; 307 and 308 repeat the method and body.
    fn redirect(&mut self, status: u16, target: String) {
        let to_get = (status == 303 && self.method != "HEAD") || (matches!(status, 301 | 302) && self.method == "POST");
        if to_get {
            self.method = "GET".into();
            self.body.clear();
            self.headers.retain(|(n, _)| {
                !["content-length", "content-type", "transfer-encoding"]
                    .iter()
                    .any(|h| n.eq_ignore_ascii_case(h))
            });
        }
        self.target = target;
    }

    /// Going to another server: its Host, and none of the credentials meant for this one
    /// (as curl and browsers do).
    fn leave_for(&mut self, authority: &str) {
        self.headers
            .retain(|(n, _)| !["authorization", "cookie"].iter().any(|h| n.eq_ignore_ascii_case(h)));
        for (n, v) in &mut self.headers {
            if n.eq_ignore_ascii_case("host") {
                *v = authority.to_string();
            }
        }
    }

    /// The request's bytes, with the jar's cookies after any the request set itself.
    fn render(&self, cookie: Option<&str>, compression: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.body.len());
        for part in [self.method.as_str(), " ", self.target.as_str(), " HTTP/1.1\r\n"] {
            out.extend_from_slice(part.as_bytes());
        }
        let mut cookie_sent = false;
        let mut accept_sent = false;
        for (n, v) in &self.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            if n.eq_ignore_ascii_case("cookie") {
                if let Some(c) = cookie {
                    out.extend_from_slice(b"; ");
                    out.extend_from_slice(c.as_bytes());
                }
                cookie_sent = true;
            }
            accept_sent |= n.eq_ignore_ascii_case("accept-encoding");
            out.extend_from_slice(b"\r\n");
        }
        if let (false, Some(c)) = (cookie_sent, cookie) {
            for part in ["Cookie: ", c, "\r\n"] {
                out.extend_from_slice(part.as_bytes());
            }
        }
        if compression && !accept_sent {
            for part in ["Accept-Encoding: ", ACCEPT_ENCODING, "\r\n"] {
                out.extend_from_slice(part.as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}
