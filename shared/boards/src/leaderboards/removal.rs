//! Taking a driver's entry off a board (account deletion): the entry, its rank row, the
//! driver's index rows and the entry's share of the board's counts (and of its car's count)
//! go in one transaction.

use super::board::{BoardId, BoardScope, RANK_KEY, StoredRow};
use super::rank_counts::Change;
use super::vehicles;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, StoreError, TxOp};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

/// Attempts before the removal is left to the caller's retry.
const ROUNDS: u32 = 8;

/// Removes `user_id`'s entry from `board` with its index row; answers the items deleted.
pub async fn remove_entry(
    ports: &Ports,
    board: &BoardId,
    user_id: &UserId,
) -> Result<u64, StoreError> {
    let key = board.entry_key(user_id);
    let mut index = vec![TxOp::Delete {
        table: Table::Leaderboards,
        key: board.index_key(user_id),
        condition: None,
    }];
    if let Some(key) = board.track_index_key(user_id) {
        index.push(TxOp::Delete {
            table: Table::Leaderboards,
            key,
            condition: None,
        });
    }
    // A submission replaced the entry meanwhile: read it again.
    retry_on_conflict(ROUNDS, is_conflict, || async {
        let Some(item) = ports.items.get(Table::Leaderboards, &key).await? else {
            let deleted = index.len() as u64;
            ports.items.transact(index.clone()).await?;
            return Ok(deleted);
        };
        let entry = StoredRow::from_item(item)?;
        let car = match &board.scope {
            BoardScope::Car(_) if entry.counted => {
                Some(vehicles::read_count(ports, &board.track, &entry.row.vehicle_name).await?)
            }
            _ => None,
        };
        let mut ops = vec![
            TxOp::Delete {
                table: Table::Leaderboards,
                key: key.clone(),
                condition: Some(Condition::eq(RANK_KEY, entry.rank_key.as_str())),
            },
            TxOp::Delete {
                table: Table::Leaderboards,
                key: board.rank_row_key(&entry.rank_key),
                condition: None,
            },
        ];
        ops.extend(index.iter().cloned());
        if entry.counted {
            ops.extend(
                Change {
                    removed: Some(entry.position()?),
                    added: None,
                }
                .ops(board),
            );
            if let Some(car) = &car {
                ops.extend(vehicles::count_ops(&board.track, car, -1));
            }
        }
        ports.items.transact(ops).await?;
        Ok(2 + index.len() as u64)
    })
    .await
}
