//! The local server: every endpoint group and the workers in one process.

use anyhow::Context;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

use paddock_api::routes::app_router;
use paddock_api::state::AppState;
use paddock_core::config::Settings;
use paddock_core::ports::Ports;
use paddock_core::queues::QueueName;
use paddock_core::workers::{self, RetryPolicy};

/// A built, bound, not yet running server.
pub struct Application {
    listener: TcpListener,
    state: AppState,
}

impl Application {
    /// Builds the ports from the settings and binds the listener (port 0 picks a free port).
    pub async fn build(mut settings: Settings) -> anyhow::Result<Self> {
        let ports = crate::wiring::ports(&mut settings).await?;
        Self::build_with_ports(settings, ports).await
    }

    /// Binds the listener for given ports (tests bring their own clock or adapters).
    pub async fn build_with_ports(mut settings: Settings, ports: Ports) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(settings.address)
            .await
            .with_context(|| format!("binding {} (Server__Address)", settings.address))?;
        // With port 0 the system picked one: URLs the server hands out (upload URLs, provider
        // callbacks by default) name the port it really listens on.
        if let Ok(bound) = listener.local_addr() {
            settings.address = bound;
        }
        Ok(Self {
            listener,
            state: AppState::new(ports, settings)
                .with_identity_providers()
                .with_coach()
                .with_webhook_client()
                .with_client_documents(),
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or_default()
    }

    /// The ports the server uses.
    pub fn ports(&self) -> &Ports {
        &self.state.ports
    }

    /// Serves until Ctrl-C or SIGTERM, then drains in-flight requests and stops the workers.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    /// Serves until `stop` completes.
    pub async fn run_until(
        self,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let ports = self.state.ports.clone();
        let policy = RetryPolicy {
            max_receives: self.state.settings.max_receives,
            ..RetryPolicy::default()
        };
        let relay = {
            let (ports, stop_rx) = (ports.clone(), stop_rx.clone());
            supervised("outbox relay", move || {
                crate::local_runner::run_relay(
                    ports.clone(),
                    Duration::from_millis(200),
                    stop_rx.clone(),
                )
            })
        };
        let consumers: Vec<_> = QueueName::ALL
            .into_iter()
            .map(|queue| {
                let processor = crate::wiring::processor(queue, &self.state.settings);
                consumer(queue, ports.clone(), processor, policy, stop_rx.clone())
            })
            .collect();
        // The embedded store has no TTL of its own: the sweep removes what expired. Over the
        // AWS adapters, DynamoDB's TTL removes it (DynamoDB Local removes nothing; reads
        // treat expired items as absent either way), and no table is scanned on a timer.
        let sweeps = self.state.settings.backend == paddock_core::config::Backend::Embedded;
        let retention = {
            let (ports, stop_rx) = (ports.clone(), stop_rx.clone());
            let (first, every) = (
                self.state.settings.retention_first_run,
                self.state.settings.retention_interval,
            );
            supervised("retention", move || {
                run_retention(ports.clone(), sweeps, first, every, stop_rx.clone())
            })
        };

        // Maintenance from start (track jobs whose lease ran out back to pending, boards written
        // before the rank counts existed counted) until the backfill is done, a read of one
        // item once it is; a store that does not answer yet is tried again.
        let maintenance = {
            let (ports, stop_rx) = (ports.clone(), stop_rx.clone());
            supervised("maintenance", move || {
                run_maintenance(ports.clone(), stop_rx.clone())
            })
        };

        let header_read_timeout = self.state.settings.header_read_timeout;
        let router = app_router(self.state);
        paddock_api::http::serve::serve(self.listener, router, header_read_timeout, async move {
            stop.await;
            tracing::info!("shutting down: draining requests and stopping workers");
        })
        .await;
        let _ = stop_tx.send(true);
        let _ = tokio::join!(
            relay,
            retention,
            maintenance,
            futures::future::join_all(consumers)
        );
        Ok(())
    }
}

/// The local consumer of `queue`, one tokio task.
fn consumer(
    queue: QueueName,
    ports: Ports,
    processor: workers::Processor,
    policy: RetryPolicy,
    stop_rx: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let first_start = Arc::new(AtomicBool::new(true));
    supervised(queue.name(), move || {
        let (ports, stop_rx) = (ports.clone(), stop_rx.clone());
        let (first_start, processor) = (first_start.clone(), processor.clone());
        async move {
            // Before this process's track-map consumer first starts, every job left in
            // processing is stuck. A store that is down now must not stop the server
            // (readiness says so).
            if queue == QueueName::TrackMaps && first_start.swap(false, Ordering::SeqCst) {
                let stuck = paddock_core::tracks::jobs::Stuck::All;
                if let Err(e) = paddock_core::tracks::jobs::reset_stuck(&ports, stuck).await {
                    tracing::warn!(error = %e, "could not return stuck track jobs to pending");
                }
            }
            crate::local_runner::run_consumer(queue, ports, processor, policy, stop_rx).await;
        }
    })
}

/// Sweeps expired items `first` after start and then every `every`, until stopped.
async fn run_retention(
    ports: Ports,
    sweeps: bool,
    first: Duration,
    every: Duration,
    mut stop_rx: watch::Receiver<bool>,
) {
    if !sweeps {
        let _ = stop_rx.changed().await;
        return;
    }
    let mut wait = first;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop_rx.changed() => return,
        }
        if let Err(e) = paddock_core::retention::sweep(&ports).await {
            tracing::error!(error = %e, "retention sweep failed; will run again on schedule");
        }
        wait = every;
    }
}

/// Runs maintenance ticks from start: one after another until the boards of an older layout
/// are all counted, then every [`TICK_EVERY`] (events open and close on time); after a failed
/// step, 30 seconds later. Until stopped.
async fn run_maintenance(ports: Ports, mut stop_rx: watch::Receiver<bool>) {
    let mut backfilled = false;
    loop {
        let report = tokio::select! {
            report = paddock_core::maintenance::tick(&ports) => report,
            _ = stop_rx.changed() => return,
        };
        let wait = match report.backfill {
            Ok(step) if step.done => {
                if !backfilled {
                    tracing::info!("leaderboard backfill done");
                    backfilled = true;
                }
                TICK_EVERY
            }
            Ok(_) => Duration::ZERO,
            Err(_) => Duration::from_secs(30),
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop_rx.changed() => return,
        }
    }
}

/// The local server's tick, once the backfill is done: events open and close within it.
const TICK_EVERY: Duration = Duration::from_secs(15);

/// Runs a background loop on its own task; a panic in it is logged with its message and the
/// loop started again a second later, instead of the task ending silently.
fn supervised<F, Fut>(name: &'static str, start: F) -> tokio::task::JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            match tokio::spawn(start()).await {
                Ok(()) => return,
                Err(e) if e.is_panic() => {
                    tracing::error!(task = name, error = %e, "background task panicked; restarting it");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(_) => return, // cancelled: the runtime is shutting down
            }
        }
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
