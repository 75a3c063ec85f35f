//! Embedded adapters: the local single-process mode with nothing to install.
//!
//! Items and queue messages live in one SQLite file (WAL, `synchronous=FULL`) under the data
//! directory; blobs are files in a directory beside it. Everything is created readable by
//! the server's user only (files 0600, directories 0700).

pub mod blobs;
pub mod database;
pub mod items;
pub(crate) mod private_fs;
pub mod queue;
pub mod read_cache;
pub mod secrets;

pub use blobs::DirBlobStore;
pub use database::Database;
pub use items::SqliteItemStore;
pub use queue::SqliteQueue;
pub use secrets::LocalSecrets;
