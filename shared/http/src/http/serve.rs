//! The local server's connection loop: HTTP/1.1 over hyper with a deadline for a request's
//! headers (hyper's own, on `hyper_util`'s tokio timer), so a client that trickles header
//! bytes cannot hold a connection (and its task and buffers) open for as long as it likes.
//! `axum::serve` sets no such deadline.
//!
//! The peer's address is the connection's, not each request's: it is held for the
//! connection's task ([`peer_address`]) instead of being put in every request's extensions
//! (an allocation and a map entry per request, for the few handlers that read it).

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// Serves `router` on `listener` until `stop` completes, then lets every open connection
/// finish its request in flight and returns once all are closed.
///
/// A connection whose request headers have not all arrived `header_read_timeout` after it
/// started waiting for them (on a new connection, or after the previous answer on a kept-alive
/// one) is closed. Handlers see the peer's address through [`peer_address`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    stop: impl Future<Output = ()>,
) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .keep_alive(true);
    // On stop, each connection finishes its request in flight and takes no further one.
    let closing = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            // Finished connections are reaped as they end, so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let connection = closing.watch(http.serve_connection(TokioIo::new(stream), service));
        connections.spawn(PEER.scope(peer, async move {
            if let Err(e) = connection.await {
                // Slow or broken clients: theirs to fix, worth a trace only.
                tracing::debug!(%peer, error = %e, "connection closed with an error");
            }
        }));
    }
    drop(listener);
    closing.shutdown().await;
    while connections.join_next().await.is_some() {}
}

tokio::task_local! {
    static PEER: SocketAddr;
}

/// The address of the peer whose connection the current task serves, when it serves one
/// of [`serve`]'s connections (hyper answers a connection's requests on its task).
pub fn peer_address() -> Option<SocketAddr> {
    PEER.try_with(|peer| *peer).ok()
}
