//! The function set as Lambda runs it: each function's binary started on its first invocation
//! (a cold start) against a runtime API of its own, an idle instance reused, and another
//! started when every instance is busy, up to a bound, as Lambda scales a function out.

use crate::lambda_runtime_api::{Answer, FunctionProcess, LineTap, RuntimeApi};
use anyhow::{Context, anyhow};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Instances of one function at most (Lambda's concurrency, kept small on a laptop).
const MAX_INSTANCES: usize = 8;

/// How long a function may take to start (its init phase).
const INIT_TIMEOUT: Duration = Duration::from_secs(30);

/// What starts one function.
#[derive(Debug, Clone)]
pub struct FunctionConfig {
    /// The function's name (its binary's name, as in Lambda's variables).
    pub name: String,
    /// The executable.
    pub binary: PathBuf,
    /// Its variables besides Lambda's own.
    pub env: Vec<(String, String)>,
    /// Its timeout (`Timeout` of the template).
    pub timeout: Duration,
    /// Whether its log lines go to this process's standard error, prefixed with its name
    /// (otherwise they are kept for failure messages).
    pub echo_logs: bool,
    /// What else sees its log lines (the delivery of its metric lines).
    pub tap: Option<LineTap>,
}

/// A started instance: a process and its runtime API.
struct Instance {
    api: RuntimeApi,
    process: FunctionProcess,
}

/// The instances of one function.
pub struct Function {
    config: FunctionConfig,
    idle: Mutex<Vec<Instance>>,
    slots: Semaphore,
}

impl Function {
    fn new(config: FunctionConfig) -> Self {
        Self {
            config,
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(MAX_INSTANCES),
        }
    }

    /// The function's timeout.
    pub fn timeout(&self) -> Duration {
        self.config.timeout
    }

    /// Runs one invocation on an idle instance, or a new one; answers what the function
    /// posted, or an error when it could not start or did not answer within its timeout
    /// (that instance is then stopped, as Lambda stops one that timed out).
    pub async fn invoke(&self, event: &serde_json::Value) -> anyhow::Result<Answer> {
        let _slot = self.slots.acquire().await.context("stopping")?;
        let idle = lock(&self.idle).pop();
        let instance = match idle {
            Some(instance) => instance,
            None => self.start().await?,
        };
        let answer = instance.api.invoke(event, self.config.timeout).await;
        match answer {
            Ok(answer) => {
                lock(&self.idle).push(instance);
                Ok(answer)
            }
            Err(e) => Err(e.context(format!(
                "{}; its output:\n{}",
                self.config.name,
                instance.process.output()
            ))),
        }
    }

    async fn start(&self) -> anyhow::Result<Instance> {
        let c = &self.config;
        let api = RuntimeApi::start(&c.name).await?;
        let echo = c.echo_logs.then(|| c.name.clone());
        let process =
            FunctionProcess::spawn_logged(&c.binary, &c.name, &api, &c.env, echo, c.tap.clone())?;
        tokio::select! {
            ready = api.first_next(INIT_TIMEOUT) => {
                ready.with_context(|| format!("{} did not start; its output:\n{}", c.name, process.output()))?;
            }
            error = api.init_error(INIT_TIMEOUT) => {
                let error = error?;
                return Err(anyhow!("{} failed to start: {}: {}", c.name, error.error_type, error.message));
            }
        }
        Ok(Instance { api, process })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every function of the set, by name.
#[derive(Clone, Default)]
pub struct Functions {
    by_name: HashMap<String, Arc<Function>>,
}

impl Functions {
    /// The set of `configs` (nothing is started yet).
    pub fn new(configs: impl IntoIterator<Item = FunctionConfig>) -> Self {
        Self {
            by_name: configs
                .into_iter()
                .map(|c| (c.name.clone(), Arc::new(Function::new(c))))
                .collect(),
        }
    }

    /// The function named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Function>> {
        self.by_name.get(name).cloned()
    }
}
