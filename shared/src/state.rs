//! State shared by every handler.

use std::sync::Arc;

use crate::config::Settings;
use crate::ports::Ports;

/// The ports and settings, cloned into every handler.
#[derive(Clone)]
pub struct AppState {
    pub ports: Ports,
    pub settings: Arc<Settings>,
}

impl AppState {
    /// State over `ports` with `settings`.
    pub fn new(ports: Ports, settings: Settings) -> Self {
        Self {
            ports,
            settings: Arc::new(settings),
        }
    }
}
