//! How long each SDK call waits for an answer and how often it is retried, by the kind of
//! call: each client has its default, and DynamoDB's reads, transactions and sweeps override
//! it per call (`customize().config_override`), since they differ in what a retry costs and
//! how long an answer may take.
//!
//! Every call on a request's path answers inside the request's own deadline (`Http__TimeoutSeconds`, 25 s, under
//! API Gateway's 29 s and the functions' 29 s timeout), so that a request that cannot finish
//! is answered by the service (503 with `Retry-After`, or 504) rather than cut by the
//! gateway. Standard retries (exponential backoff with full jitter, and the SDK's retry quota
//! so a failing service is not retried into the ground) rather than adaptive ones: adaptive
//! retries learn a send rate per client, which a short-lived function instance never keeps
//! long enough to use.

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use std::time::Duration;

/// The retry and timeout settings of one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// Backoff before the first retry (doubled per retry, jittered, at most `max_backoff`).
    pub initial_backoff: Duration,
    /// Longest backoff between two attempts.
    pub max_backoff: Duration,
    /// Longest wait for one attempt's answer; after it the attempt counts as failed.
    pub attempt_timeout: Duration,
    /// Longest wait for a call, its retries included.
    pub operation_timeout: Duration,
}

/// Connecting within the region takes milliseconds; a second means the address is gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// DynamoDB's single-item writes (the client's default): DynamoDB answers in milliseconds,
/// so 3 s without an answer is a lost call; four attempts within 8 s leave a request that
/// makes two or three sequential calls inside its deadline. A write sent again is harmless
/// (each is conditional or keyed, and finds its own earlier success).
pub const DYNAMODB: CallLimits = CallLimits {
    max_attempts: 4,
    initial_backoff: Duration::from_millis(50),
    max_backoff: Duration::from_secs(1),
    attempt_timeout: Duration::from_secs(3),
    operation_timeout: Duration::from_secs(8),
};

/// DynamoDB's reads (`GetItem`, `Query`, `BatchGetItem`, `TransactGetItems`): nothing to undo when sent again, and the common
/// case of a request (a read path has one or two of them in a row), so a read that has not
/// answered in 2 s is given up for a fresh attempt sooner than a write, and the whole call
/// in 5 s leaves a read path's answer well inside the deadline.
pub const DYNAMODB_READS: CallLimits = CallLimits {
    max_attempts: 4,
    initial_backoff: Duration::from_millis(25),
    max_backoff: Duration::from_millis(500),
    attempt_timeout: Duration::from_secs(2),
    operation_timeout: Duration::from_secs(5),
};

/// DynamoDB's transactions (`TransactWriteItems`, up to 100 items): one takes a few times a
/// single write's time, and is sent again under the same `ClientRequestToken`, which DynamoDB
/// answers as the first success for 10 minutes; 4 s an attempt and 10 s the call.
pub const DYNAMODB_TRANSACTIONS: CallLimits = CallLimits {
    max_attempts: 4,
    initial_backoff: Duration::from_millis(50),
    max_backoff: Duration::from_secs(1),
    attempt_timeout: Duration::from_secs(4),
    operation_timeout: Duration::from_secs(10),
};

/// DynamoDB's sweeps (the retention scan and its deletes, bulk writes of maintenance): no
/// driver waits for them and they run in the scheduled function (15 minutes), so they wait
/// out a throttled table longer rather than fail a run: six attempts, up to 5 s apart, 10 s an
/// attempt and 40 s the call.
pub const DYNAMODB_SWEEPS: CallLimits = CallLimits {
    max_attempts: 6,
    initial_backoff: Duration::from_millis(100),
    max_backoff: Duration::from_secs(5),
    attempt_timeout: Duration::from_secs(10),
    operation_timeout: Duration::from_secs(40),
};

/// S3 moves whole files (up to a few MiB from a function), so one attempt gets 10 s; S3's
/// `SlowDown` asks for a longer backoff than DynamoDB's throttling.
pub const S3: CallLimits = CallLimits {
    max_attempts: 4,
    initial_backoff: Duration::from_millis(100),
    max_backoff: Duration::from_secs(2),
    attempt_timeout: Duration::from_secs(10),
    operation_timeout: Duration::from_secs(20),
};

/// SQS sends and deletes answer in milliseconds, as DynamoDB's calls do. A long poll waits
/// up to 20 s by design, so a receive sets its own attempt timeout ([`long_poll`]).
pub const SQS: CallLimits = CallLimits {
    max_attempts: 4,
    initial_backoff: Duration::from_millis(50),
    max_backoff: Duration::from_secs(1),
    attempt_timeout: Duration::from_secs(3),
    operation_timeout: Duration::from_secs(8),
};

/// Secrets are read once per function instance and cached; a slow read delays one cold
/// start, so it gets the same bounds as a DynamoDB call.
pub const SECRETS: CallLimits = DYNAMODB;

/// CloudWatch's metric reads (`GET /metrics` of the health function) answer in a fraction of a
/// second; a scrape makes a few in a row (the metric list's pages, then the values), so each
/// gets 4 s and its retries 6 s, and three in a row stay inside the request's deadline.
pub const CLOUDWATCH: CallLimits = CallLimits {
    max_attempts: 3,
    initial_backoff: Duration::from_millis(100),
    max_backoff: Duration::from_secs(1),
    attempt_timeout: Duration::from_secs(4),
    operation_timeout: Duration::from_secs(6),
};

impl CallLimits {
    /// The SDK's retry settings.
    pub fn retry_config(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts)
            .with_initial_backoff(self.initial_backoff)
            .with_max_backoff(self.max_backoff)
    }

    /// The SDK's timeout settings.
    pub fn timeout_config(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .operation_attempt_timeout(self.attempt_timeout)
            .operation_timeout(self.operation_timeout)
            .build()
    }

    /// A DynamoDB call's override of its client's settings.
    pub fn dynamodb_call(&self) -> aws_sdk_dynamodb::config::Builder {
        aws_sdk_dynamodb::config::Builder::default()
            .retry_config(self.retry_config())
            .timeout_config(self.timeout_config())
    }
}

/// The timeouts of a long poll that waits up to `wait`: an attempt may take the whole wait
/// and a few seconds more.
pub fn long_poll(wait: Duration) -> TimeoutConfig {
    let attempt = wait + SQS.attempt_timeout;
    TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(attempt)
        .operation_timeout(attempt + SQS.operation_timeout)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_ends_inside_the_request_deadline() {
        let on_a_request = [
            DYNAMODB,
            DYNAMODB_READS,
            DYNAMODB_TRANSACTIONS,
            S3,
            SQS,
            SECRETS,
            CLOUDWATCH,
        ];
        for limits in on_a_request {
            assert!(limits.attempt_timeout <= limits.operation_timeout);
            assert!(limits.operation_timeout < Duration::from_secs(25));
        }
        // Two reads and a transaction in a row, each given up at its bound, still answer
        // inside the request's deadline.
        let path = 2 * DYNAMODB_READS.operation_timeout + DYNAMODB_TRANSACTIONS.operation_timeout;
        assert!(path < Duration::from_secs(25), "{path:?}");
        // A sweep's call ends well inside the scheduled function's 15 minutes.
        assert!(DYNAMODB_SWEEPS.operation_timeout < Duration::from_secs(60));
        assert!(DYNAMODB_SWEEPS.attempt_timeout <= DYNAMODB_SWEEPS.operation_timeout);
    }
}
