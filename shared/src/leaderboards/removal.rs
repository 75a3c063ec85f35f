//! Taking a driver's entry off a board (account deletion): the entry, its rank row, the
//! driver's index row and the entry's share of the board's counts go in one transaction.

use std::time::Duration;

use super::board::{BoardId, RANK_KEY, StoredRow};
use super::rank_counts::Change;
use crate::ids::UserId;
use crate::ports::Ports;
use crate::ports::items::{Condition, StoreError, TxOp};
use crate::tables::Table;

/// Attempts before the removal is left to the caller's retry.
const ROUNDS: u32 = 8;

/// Removes `user_id`'s entry from `board` with its index row; answers the items deleted.
pub(crate) async fn remove_entry(
    ports: &Ports,
    board: &BoardId,
    user_id: &UserId,
) -> Result<u64, StoreError> {
    let key = board.entry_key(user_id);
    let index = TxOp::Delete {
        table: Table::Leaderboards,
        key: board.index_key(user_id),
        condition: None,
    };
    for round in 0..ROUNDS {
        let Some(item) = ports.items.get(Table::Leaderboards, &key).await? else {
            ports.items.transact(vec![index]).await?;
            return Ok(1);
        };
        let entry = StoredRow::from_item(item)?;
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
            index.clone(),
        ];
        if entry.counted {
            ops.extend(
                Change {
                    removed: Some(entry.position()?),
                    added: None,
                }
                .ops(board),
            );
            if board.vehicle.is_some() {
                ops.push(super::vehicles::count_op(
                    &board.track,
                    &entry.row.vehicle_name,
                    -1,
                ));
            }
        }
        match ports.items.transact(ops).await {
            Ok(()) => return Ok(3),
            // A submission replaced the entry meanwhile: read it again.
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                tokio::time::sleep(Duration::from_millis(5 * u64::from(round + 1))).await;
            }
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Conflict)
}
