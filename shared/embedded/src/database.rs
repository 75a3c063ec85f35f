//! The SQLite file shared by the embedded item store and queue.

use rusqlite::{Connection, OpenFlags};
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::private_fs;
use std::time::Duration;

/// Opens connections to one SQLite database file with the pragmas every connection needs.
///
/// The embedded store caches point reads of what it wrote, which is exact only while no
/// other process writes the same file; so the data directory is locked (`paddock.lock`, an
/// exclusive OS file lock) for as long as any clone of the database or a store over it lives.
#[derive(Debug, Clone)]
pub struct Database {
    path: PathBuf,
    lock: Arc<File>,
}

/// The message when another process holds the data directory.
fn locked_message(dir: &Path) -> String {
    format!(
        "another Paddock process is using the data directory {}; stop it or set Data__Dir to another directory",
        dir.display()
    )
}

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process (or store) holds the data directory.
    #[error("{0}")]
    Locked(String),
    /// The directory or its lock file could not be made.
    #[error("{path}: {source}")]
    Io {
        /// The directory or file.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// SQLite refused the file.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Takes the data directory's lock, or says who holds it.
fn lock_dir(dir: &Path) -> Result<File, OpenError> {
    let io = |source| OpenError::Io {
        path: dir.display().to_string(),
        source,
    };
    let file = private_fs::open_or_create(&dir.join("paddock.lock")).map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(OpenError::Locked(locked_message(dir))),
        Err(TryLockError::Error(e)) => Err(io(e)),
    }
}

/// SQLite's page cache per connection, KiB (its default, stated: the store holds six
/// connections, so at most about 12 MiB of pages whatever the size of the file).
const CACHE_KIB: i64 = 2048;

/// A connection behind a mutex, used from the blocking thread pool.
pub type SharedConnection = Arc<Mutex<Connection>>;

impl Database {
    /// Creates the file (and its directory) if needed and applies the schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent() {
            private_fs::create_dir_all(dir).map_err(|source| OpenError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let lock = Arc::new(lock_dir(dir)?);
        // Created 0600 before SQLite opens it; SQLite gives its -wal and -shm files the
        // database file's mode. Files an earlier version left readable are narrowed.
        let io = |source| OpenError::Io {
            path: path.display().to_string(),
            source,
        };
        private_fs::open_or_create(&path).map_err(io)?;
        let beside = |suffix: &str| {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        };
        for file in [
            path.clone(),
            beside("-wal"),
            beside("-shm"),
            dir.join("paddock.lock"),
        ] {
            private_fs::restrict(&file).map_err(io)?;
        }
        let db = Self { path, lock };
        let conn = db.connect()?;
        conn.execute_batch(SCHEMA)?;
        migrate(&conn)?;
        Ok(db)
    }

    /// The data-directory lock, held by every store over this database.
    pub fn lock(&self) -> Arc<File> {
        self.lock.clone()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new read-write connection.
    pub fn connect(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // WAL lets readers run beside the writer; FULL makes every commit durable on return.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(Duration::from_secs(10))?;
        // No memory map: every page of the file a map had touched stayed in the process's
        // resident memory, so it grew with the data (a backfill reads the whole board). Pages
        // come through SQLite's own cache instead, bounded per connection; the kernel's page
        // cache keeps the file's hot pages a read() away.
        conn.pragma_update(None, "mmap_size", 0)?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
        Ok(conn)
    }

    /// A new connection wrapped for sharing.
    pub fn shared(&self) -> rusqlite::Result<SharedConnection> {
        Ok(Arc::new(Mutex::new(self.connect()?)))
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    tbl  TEXT NOT NULL,
    pk   TEXT NOT NULL,
    sk   TEXT NOT NULL,
    ttl  INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (tbl, pk, sk)
) WITHOUT ROWID;
-- The retention sweep finds expired items through this index.
CREATE INDEX IF NOT EXISTS items_expiry ON items (tbl, ttl, pk, sk) WHERE ttl IS NOT NULL;

CREATE TABLE IF NOT EXISTS queue_messages (
    id            TEXT PRIMARY KEY,
    body          TEXT NOT NULL,
    visible_at_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt       TEXT,
    dead          INTEGER NOT NULL DEFAULT 0,
    dead_reason   TEXT,
    seq           INTEGER NOT NULL,
    queue         TEXT NOT NULL DEFAULT 'track-maps'
);
";

/// Brings a database written by an earlier version up to [`SCHEMA`].
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    // Queues became named (one per consumer); messages of the single earlier queue were all
    // track-map work, the only kind it processed.
    let has_queue: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('queue_messages') WHERE name = 'queue'",
        [],
        |r| r.get(0),
    )?;
    if !has_queue {
        conn.execute_batch(
            "ALTER TABLE queue_messages ADD COLUMN queue TEXT NOT NULL DEFAULT 'track-maps';
             DROP INDEX IF EXISTS queue_visible;",
        )?;
    }
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS queue_ready ON queue_messages (queue, dead, visible_at_ms, seq);",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory map kept every page it touched resident in the process, so the server's
    /// memory grew with the file; the page cache is what bounds it now.
    #[test]
    fn connections_map_none_of_the_file_and_bound_their_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("paddock.db")).unwrap();
        let conn = db.connect().unwrap();
        let mmap: i64 = conn
            .pragma_query_value(None, "mmap_size", |r| r.get(0))
            .unwrap();
        let cache: i64 = conn
            .pragma_query_value(None, "cache_size", |r| r.get(0))
            .unwrap();
        assert_eq!((mmap, cache), (0, -CACHE_KIB));
    }
}
