//! The local server, and beside it the service's routes alone (no workers) over the same
//! store wrapped in a counter, with the page cache off: a request through them is a miss whose
//! every store call is its own, counted by [`CountingItems`].

use std::sync::Arc;
use std::time::Duration;

use paddock_api::state::AppState;
use paddock_core::config::Settings;

use crate::counting_items::CountingItems;
use crate::{Backend, TestApp, ports, spawn_with};

/// The server (to write through) and the counted routes (to measure through).
pub struct CountedRoutes {
    /// The local server over the store.
    pub app: TestApp,
    /// Every group's routes over the counted store.
    pub router: axum::Router,
    /// The counters of the routes' store.
    pub counting: Arc<CountingItems>,
}

/// Fresh ports of `backend`, their settings changed by `configure`, served both ways.
pub async fn spawn(backend: Backend, configure: impl FnOnce(&mut Settings)) -> CountedRoutes {
    let mut t = ports(backend).await;
    configure(&mut t.settings);
    let counting = CountingItems::new(t.ports.items.clone());
    let mut viewing = t.settings.clone();
    viewing.leaderboard_cache = Duration::ZERO;
    let mut counted_ports = t.ports.clone();
    counted_ports.items = counting.clone();
    let router = paddock_api::routes::app_router(AppState::new(counted_ports, viewing));
    let app = spawn_with(t.settings, t.ports, t.dir).await;
    CountedRoutes {
        app,
        router,
        counting,
    }
}
