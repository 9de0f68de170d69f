//! The tests' gRPC server as a program, for benchmarks and for trying crest by hand:
//! `grpc-echo [PORT] [LIMIT] [SERVICE_MS]` serves test.Echo (with health and reflection) on
//! 127.0.0.1:PORT (0: any free port, printed), refusing calls past LIMIT at once (0: none) with
//! UNAVAILABLE, each Say taking SERVICE_MS. It prints its counts when stdin closes.

use crest_testkit::grpc::{Behaviour, Counts, GrpcServer};
use std::io::Read;

fn main() {
    let arg = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
    let (port, limit, service_ms) = (arg(1), arg(2), arg(3));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let behaviour = Behaviour {
            limit,
            service_time: std::time::Duration::from_millis(service_ms),
        };
        let server = GrpcServer::start_on(port as u16, behaviour, true).await;
        println!("listening on {}", server.addr);
        let counts = server.counts.clone();
        tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        })
        .await
        .ok();
        println!(
            "calls {} ok {} refused {} failed {} received {} streamed {}",
            Counts::get(&counts.calls),
            Counts::get(&counts.ok),
            Counts::get(&counts.refused),
            Counts::get(&counts.failed),
            Counts::get(&counts.received),
            Counts::get(&counts.streamed)
        );
    });
}
