//! argon2id password hashing (OWASP parameters: m=19 MiB, t=2, p=1) on a small pool of its own.
//!
//! Each hash needs 19 MiB of working memory. Run on tokio's blocking pool, concurrent sign-ins
//! allocated that much each, without bound, and the allocator kept the memory afterwards
//! (docs/perf.md has the figures). The pool here has a fixed number
//! of threads (`Auth__HashingThreads`, default: the cores), each of which allocates its one
//! argon2 memory block at its first hash and reuses it for every hash after, so hashing memory
//! never grows past one block a thread. A request waits at most `Auth__HashingWaitMillis` for a free thread and
//! is otherwise answered 503 with `Retry-After`, so a flood queues nothing without bound.
//! The embedded store's writes run on tokio's blocking pool and never wait behind a hash.

use argon2::password_hash::{Output, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::sync::{Semaphore, oneshot};

use super::fields::Password;

/// The parameters of every new hash.
fn params() -> Params {
    Params::new(19 * 1024, 2, 1, None).expect("valid argon2 params")
}

fn argon2_with(params: Params) -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Why a password could not be hashed or checked now.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Every hashing thread stayed busy for longer than the configured wait.
    #[error("password hashing is saturated; retry in {retry_after_secs} s")]
    Busy {
        /// Seconds until a retry may succeed (`Retry-After`).
        retry_after_secs: u64,
    },
    /// The hashing threads are gone (the process is shutting down) or a hash failed.
    #[error("password hashing failed: {0}")]
    Failed(String),
}

type Job = Box<dyn FnOnce(&mut [Block]) + Send>;

/// What an unknown email's password is verified against, so that it costs one verify with
/// the parameters of every hash, as a known account's wrong password does. Its password was
/// random and thrown away, and its answer is discarded anyway ([`PasswordHasher::verify`]
/// answers false without an account). Written here rather than hashed at start, which held
/// a Lambda function's init up for a whole hash.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$1tV0KXoO8TvIg9VbYdkJuA$2DJtu0oV+7wR9YojxuJGRlBcLQNR7rWT9v8WCUK9hIE";

/// The hashing threads, their admission control and the dummy hash.
pub struct PasswordHasher {
    jobs: Mutex<mpsc::Sender<Job>>,
    permits: Arc<Semaphore>,
    wait: Duration,
    threads: usize,
}

impl std::fmt::Debug for PasswordHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordHasher")
            .field("threads", &self.threads)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl PasswordHasher {
    /// Starts `threads` hashing threads, each with its own memory block.
    pub fn start(threads: usize, wait: Duration) -> Self {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for n in 0..threads {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("paddock-argon2-{n}"))
                .spawn(move || {
                    // Allocated at the thread's first hash (writing 19 MiB at start held
                    // up a Lambda function's init), then kept: at most one block a thread.
                    let mut blocks: Vec<Block> = Vec::new();
                    loop {
                        // The lock is held only while waiting for the next job.
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => {
                                if blocks.is_empty() {
                                    blocks = vec![Block::default(); params().block_count()];
                                }
                                job(&mut blocks);
                            }
                            Err(_) => return, // the hasher was dropped
                        }
                    }
                })
                .expect("a hashing thread starts");
        }
        Self {
            jobs: Mutex::new(tx),
            permits: Arc::new(Semaphore::new(threads)),
            wait,
            threads,
        }
    }

    /// How many hashes run at once at most.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work` on a hashing thread once one is free within the configured wait.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut [Block]) -> T + Send + 'static,
    ) -> Result<T, PasswordError> {
        let permit = tokio::time::timeout(self.wait, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| PasswordError::Busy {
                retry_after_secs: self.wait.as_secs().max(1),
            })?
            .map_err(|_| PasswordError::Failed("hashing pool closed".into()))?;
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |blocks| {
            let result = work(blocks);
            // Free the thread before answering: a caller that hashes again right away (a
            // password change verifies, then hashes) must find it free.
            drop(permit);
            let _ = tx.send(result);
        });
        self.jobs
            .lock()
            .map_err(|_| PasswordError::Failed("hashing pool poisoned".into()))?
            .send(job)
            .map_err(|_| PasswordError::Failed("hashing threads stopped".into()))?;
        rx.await
            .map_err(|_| PasswordError::Failed("hashing thread ended early".into()))
    }

    /// The PHC string of `password` with a fresh salt.
    pub async fn hash(&self, password: Password) -> Result<String, PasswordError> {
        self.run(move |blocks| hash_with(password.expose(), blocks))
            .await?
            .map_err(PasswordError::Failed)
    }

    /// Whether `password` matches `phc`; with no hash, verifies against the dummy hash and
    /// answers false, so an unknown account costs the same time as a wrong password.
    pub async fn verify(
        &self,
        password: String,
        phc: Option<String>,
    ) -> Result<bool, PasswordError> {
        let known = phc.is_some();
        let phc = phc.unwrap_or_else(|| DUMMY_HASH.to_owned());
        let matches = self
            .run(move |blocks| verify_with(&password, &phc, blocks))
            .await?;
        Ok(matches && known)
    }
}

/// Hashes into the thread's own memory block.
fn hash_with(password: &str, blocks: &mut [Block]) -> Result<String, String> {
    let mut salt = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| format!("salt: {e}"))?;
    let params = params();
    let argon2 = argon2_with(params.clone());
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    let mut salt_bytes = [0u8; 64];
    let salt_raw = salt
        .as_salt()
        .decode_b64(&mut salt_bytes)
        .map_err(|e| format!("salt: {e}"))?;
    argon2
        .hash_password_into_with_memory(password.as_bytes(), salt_raw, &mut out, blocks)
        .map_err(|e| format!("hash: {e}"))?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: (&params).try_into().map_err(|e| format!("params: {e}"))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(|e| format!("output: {e}"))?),
    };
    Ok(phc.to_string())
}

/// Verifies against a PHC string, in the thread's memory block when the parameters are ours
/// (a hash with other parameters, say from an older setting, gets memory of its own).
fn verify_with(password: &str, phc: &str, blocks: &mut [Block]) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) = (
        Algorithm::try_from(parsed.algorithm),
        Params::try_from(&parsed),
    ) else {
        return false;
    };
    let version = parsed
        .version
        .and_then(|v| Version::try_from(v).ok())
        .unwrap_or_default();
    let mut salt_bytes = [0u8; 64];
    let Ok(salt_raw) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    let argon2 = Argon2::new(algorithm, version, params.clone());
    let hashed = if params.block_count() == blocks.len() {
        argon2.hash_password_into_with_memory(password.as_bytes(), salt_raw, &mut out, blocks)
    } else {
        argon2.hash_password_into(password.as_bytes(), salt_raw, &mut out)
    };
    hashed.is_ok() && bool::from(out.as_slice().ct_eq(expected.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::PasswordVerifier;

    fn password(s: &str) -> Password {
        Password::parse(s).unwrap()
    }

    #[test]
    fn the_dummy_hash_costs_what_a_stored_hash_costs() {
        let dummy = PasswordHash::new(DUMMY_HASH).unwrap();
        assert_eq!(
            Algorithm::try_from(dummy.algorithm).unwrap(),
            Algorithm::Argon2id
        );
        let (parsed, ours) = (Params::try_from(&dummy).unwrap(), params());
        assert_eq!(
            (parsed.m_cost(), parsed.t_cost(), parsed.p_cost()),
            (ours.m_cost(), ours.t_cost(), ours.p_cost())
        );
        assert_eq!(
            parsed.block_count(),
            ours.block_count(),
            "it runs in a thread's block"
        );
        assert_eq!(dummy.hash.unwrap().len(), Params::DEFAULT_OUTPUT_LEN);
    }

    #[tokio::test]
    async fn hashes_verify_and_match_the_argon2_crate() {
        let pool = PasswordHasher::start(2, Duration::from_secs(30));
        let phc = pool.hash(password("correct horse battery")).await.unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(
            pool.verify("correct horse battery".into(), Some(phc.clone()))
                .await
                .unwrap()
        );
        assert!(
            !pool
                .verify("wrong horse battery".into(), Some(phc.clone()))
                .await
                .unwrap()
        );
        assert!(
            !pool
                .verify("correct horse battery".into(), None)
                .await
                .unwrap()
        );
        // The crate's own verifier accepts our string, and we accept the crate's strings,
        // including ones with other parameters.
        let parsed = PasswordHash::new(&phc).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"correct horse battery", &parsed)
                .is_ok()
        );
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let other = argon2::PasswordHasher::hash_password(
            &argon2_with(Params::new(8 * 1024, 1, 1, None).unwrap()),
            b"pw with other params",
            &salt,
        )
        .unwrap()
        .to_string();
        assert!(
            pool.verify("pw with other params".into(), Some(other))
                .await
                .unwrap()
        );
        assert!(
            !pool
                .verify("x".into(), Some("not a phc".into()))
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn a_saturated_pool_answers_busy_instead_of_queueing() {
        let pool = Arc::new(PasswordHasher::start(1, Duration::from_millis(1)));
        // Occupy the one thread until released, so the test does not race a real hash.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (started, has_started) = oneshot::channel();
        let first = {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.run(move |_| {
                    let _ = started.send(());
                    released.recv().ok();
                })
                .await
            })
        };
        has_started.await.unwrap();
        let second = pool.hash(password("second password")).await;
        assert!(
            matches!(
                second,
                Err(PasswordError::Busy {
                    retry_after_secs: 1
                })
            ),
            "{second:?}"
        );
        release.send(()).unwrap();
        assert!(first.await.unwrap().is_ok());
        assert!(pool.hash(password("third password")).await.is_ok());
    }
}
