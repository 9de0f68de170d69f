//! gRPC calls whose services are known only at run time.
//!
//! A scenario names a method (`package.Service/Method`) and writes its request as JSON; the
//! method's descriptors come from `.proto` files compiled in-process by protox (no `protoc` on
//! the user's machine, [`Protos`]) or from the server's own reflection service ([`reflect`]).
//! [`Method`] turns JSON into the wire bytes once per call and a response back into JSON only
//! when a step reads it, so a call that checks nothing never decodes what it receives.
//!
//! [`Conn`] is one HTTP/2 connection (hyper's client over whatever transport the caller
//! opened: crest's own, so a target's addresses, proxy tunnel and TLS apply) with tonic's
//! client framing on it; calls on it are multiplexed as streams. Every way a call ends is one
//! of crest's outcomes: a status the server sent is `grpc_<code>`, a connection that failed
//! under it is what it would be for a request (`reset`, `closed`, `h2_rst_7`, ...).
#![warn(missing_docs)]

mod call;
mod describe;
mod reflect;

pub use call::{reserved, CallError, Conn, Counts};
pub use describe::{DescribeError, Method, Protos};
pub use reflect::reflect;
