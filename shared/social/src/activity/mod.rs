//! Activity: the driver's feed and achievements, kept by the feed and achievements consumers
//! from the events the outbox fans out to their queues.

pub mod achievements;
pub mod catalog;
pub mod feed;
pub mod feed_text;
pub mod statistics;
