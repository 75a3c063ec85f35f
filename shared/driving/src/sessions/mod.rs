//! Session sync: idempotent uploads of session summaries, and the caller's reads.
//!
//! Key layout (table `sessions`, partition `USER#<user id>`):
//! - `SESSION#<session id>`: the session with its laps (one item; laps are compact rows).
//!   The session id is a UUIDv7 whose timestamp is the client's RecordedAt, so the sort key
//!   orders the partition by RecordedAt and "newest first" is a descending query.
//! - `CLIENT#<ClientSessionId>`: the idempotency record, put with a does-not-exist condition
//!   in the same transaction as the session, so a repeat or a concurrent duplicate can never
//!   create a second session.

pub mod create;
pub mod records;
pub mod upload;

pub use create::{CreateError, Receipt, create};
pub use records::{SessionDetail, SessionSummary};
