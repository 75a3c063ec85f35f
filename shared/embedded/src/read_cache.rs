//! A write-through cache of point reads for the embedded item store.
//!
//! A SQLite point read costs far more than its B-tree lookup: every read transaction takes
//! the WAL's shared-memory locks (system calls and a process-wide mutex). Hot keys, such as a
//! token family checked on every authenticated request, are therefore served from memory.
//!
//! The cache stays exact because this process is the only writer of the database file (the
//! embedded backend belongs to one server process): every write forgets the keys it touches
//! after it commits, and a read that raced with a write does not fill the cache, which a
//! generation counter detects. Expiry is judged on every hit, as the store does.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use paddock_core::ports::items::{Item, Key, is_expired};
use paddock_core::tables::Table;

/// About the memory the entries may hold; the cache starts over beyond. Bounded in bytes, not
/// entries: a count bound let a backfill of a large board fill it with large items.
const MAX_BYTES: usize = 16 << 20;
/// What an entry costs besides its keys and item: the maps' slots and the shared pointer.
const ENTRY_BYTES: usize = 96;

/// About the memory an entry of `key` holding `item` takes: its keys, its slots and the item
/// (twice the item's JSON text: a parsed value takes more room than its text).
fn weight(key: &Key, item: Option<&Item>) -> usize {
    let item = item.map_or(0, |i| {
        serde_json::to_vec(i).map_or(0, |text| 2 * text.len())
    });
    ENTRY_BYTES + key.pk.len() + key.sk.len() + item
}

/// What a lookup found.
pub enum Lookup {
    /// The item (or its absence) as last read or written, shared with the cache.
    Hit(Option<Arc<Item>>),
    /// Not cached; fill with the read's result, passing this generation.
    Miss(u64),
}

/// Entries by table, partition key and sort key (nested so a lookup borrows the key).
/// Items are shared: a hit hands out a reference count, not a copy of every attribute. The
/// keys are hashed with `foldhash` (randomly seeded per process, as `hashbrown`'s own
/// default): a hit hashes two keys, and SipHash was a third of its time.
type Entries = HashMap<Table, HashMap<String, Partition, Hasher>, Hasher>;
type Partition = HashMap<String, Entry, Hasher>;
type Hasher = foldhash::fast::RandomState;

/// A cached read: the item (or its absence) and its [`weight`].
struct Entry {
    item: Option<Arc<Item>>,
    bytes: usize,
}

#[derive(Default)]
struct Inner {
    generation: u64,
    bytes: usize,
    entries: Entries,
}

/// Point reads by (table, key); lookups share the lock, fills and writes take it alone.
#[derive(Default)]
pub struct ReadCache {
    inner: RwLock<Inner>,
}

impl ReadCache {
    /// The cached state of `key`, live at Unix time `now`.
    pub fn lookup(&self, table: Table, key: &Key, now: i64) -> Lookup {
        let Ok(inner) = self.inner.read() else {
            return Lookup::Miss(u64::MAX);
        };
        let found = inner
            .entries
            .get(&table)
            .and_then(|t| t.get(key.pk.as_str()))
            .and_then(|p| p.get(key.sk.as_str()));
        match found.map(|e| &e.item) {
            Some(Some(item)) if is_expired(item, now) => Lookup::Hit(None),
            Some(found) => Lookup::Hit(found.clone()),
            None => Lookup::Miss(inner.generation),
        }
    }

    /// Remembers a read made after [`ReadCache::lookup`] answered `Miss(generation)`, unless
    /// a write happened since (the read may then be older than that write).
    pub fn fill(&self, table: Table, key: &Key, value: Option<Arc<Item>>, generation: u64) {
        let Ok(mut inner) = self.inner.write() else {
            return;
        };
        if inner.generation != generation {
            return;
        }
        let bytes = weight(key, value.as_deref());
        if inner.bytes + bytes > MAX_BYTES {
            inner.entries.clear();
            inner.bytes = 0;
        }
        let partition = inner
            .entries
            .entry(table)
            .or_default()
            .entry(key.pk.clone())
            .or_default();
        let replaced = partition.insert(key.sk.clone(), Entry { item: value, bytes });
        inner.bytes = inner.bytes + bytes - replaced.map_or(0, |e| e.bytes);
    }

    /// Forgets `keys` after a write (committed or not) and starts a new generation.
    pub fn forget<'a>(&self, keys: impl IntoIterator<Item = (Table, &'a Key)>) {
        let Ok(mut inner) = self.inner.write() else {
            return;
        };
        for (table, key) in keys {
            let Some(partitions) = inner.entries.get_mut(&table) else {
                continue;
            };
            let Some(partition) = partitions.get_mut(key.pk.as_str()) else {
                continue;
            };
            let removed = partition.remove(key.sk.as_str()).map_or(0, |e| e.bytes);
            if partition.is_empty() {
                partitions.remove(key.pk.as_str());
            }
            inner.bytes -= removed;
        }
        inner.generation += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(ttl: i64) -> Item {
        json!({"pk": "p", "sk": "s", "ttl": ttl})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn the_entries_stay_within_their_bytes() {
        let cache = ReadCache::default();
        let large = Arc::new(
            json!({"pk": "p", "sk": "s", "blob": "x".repeat(64 * 1024)})
                .as_object()
                .cloned()
                .unwrap(),
        );
        for n in 0..1_000 {
            let key = Key::new("p", format!("s{n}"));
            let Lookup::Miss(generation) = cache.lookup(Table::Leaderboards, &key, 0) else {
                panic!("a hit before its fill");
            };
            cache.fill(Table::Leaderboards, &key, Some(large.clone()), generation);
            let bytes = cache.inner.read().unwrap().bytes;
            assert!(bytes <= MAX_BYTES, "{bytes}");
        }
        // Forgetting what is cached gives its bytes back.
        let inner_bytes = |c: &ReadCache| c.inner.read().unwrap().bytes;
        let key = Key::new("p", "s999");
        assert!(inner_bytes(&cache) > 0);
        let before = inner_bytes(&cache);
        cache.forget([(Table::Leaderboards, &key)]);
        assert!(inner_bytes(&cache) < before);
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_kept() {
        let cache = ReadCache::default();
        let key = Key::new("p", "s");
        let Lookup::Miss(generation) = cache.lookup(Table::Tokens, &key, 0) else {
            panic!("empty cache hit");
        };
        cache.forget([(Table::Tokens, &key)]); // a write lands while the read runs
        cache.fill(Table::Tokens, &key, Some(Arc::new(item(100))), generation);
        assert!(matches!(
            cache.lookup(Table::Tokens, &key, 0),
            Lookup::Miss(_)
        ));
    }

    #[test]
    fn hits_judge_expiry_and_writes_forget() {
        let cache = ReadCache::default();
        let key = Key::new("p", "s");
        let Lookup::Miss(generation) = cache.lookup(Table::Tokens, &key, 0) else {
            panic!("empty cache hit");
        };
        cache.fill(Table::Tokens, &key, Some(Arc::new(item(100))), generation);
        assert!(matches!(
            cache.lookup(Table::Tokens, &key, 50),
            Lookup::Hit(Some(_))
        ));
        assert!(matches!(
            cache.lookup(Table::Tokens, &key, 100),
            Lookup::Hit(None)
        ));
        assert!(matches!(
            cache.lookup(Table::Users, &key, 50),
            Lookup::Miss(_)
        ));
        cache.forget([(Table::Tokens, &key)]);
        assert!(matches!(
            cache.lookup(Table::Tokens, &key, 50),
            Lookup::Miss(_)
        ));
    }
}
