//! A WebSocket echo server for benchmarks and for trying crest by hand: `ws-echo [PORT]` echoes
//! every text and binary message on 127.0.0.1:PORT (0: any free port, printed), and prints how
//! many it echoed when stdin closes.

use futures_util::{SinkExt, StreamExt};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn main() {
    let port: u16 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        println!("listening on {}", listener.local_addr().expect("addr"));
        let echoed = Arc::new(AtomicU64::new(0));
        let counted = echoed.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                        return;
                    };
                    while let Some(Ok(m)) = ws.next().await {
                        if (m.is_text() || m.is_binary()) && ws.send(m).await.is_ok() {
                            counted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        })
        .await
        .ok();
        println!("echoed {}", echoed.load(Ordering::Relaxed));
    });
}
