//! The local server: every endpoint group and the workers in one process (`cargo run`).

use anyhow::Context;
use paddock_core::config::Settings;
use paddock_runtime::app::Application;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = dotenvy::dotenv();
    let settings = Settings::from_env()?;
    // Held until the server stops, so the last lines are written.
    let _log = paddock_runtime::telemetry::init(settings.log_format);
    let app = Application::build(settings)
        .await
        .context("starting Paddock")?;
    tracing::info!(port = app.port(), "Paddock is listening");
    app.run_until_stopped().await
}
