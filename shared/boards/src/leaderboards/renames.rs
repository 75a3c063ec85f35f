//! A driver's new name and avatar on the boards: the `profile.updated` consumer rewrites the
//! driver's entries (found through the driver's board index) with the profile as it is when
//! the event is handled. Each row records the profile version it shows and a rewrite only
//! moves a row to a newer version, so late, repeated or reordered events change nothing.

use super::board::{BOARD_INDEX_PREFIX, BoardId, RANK_KEY, StoredRow};
use super::cache::{forget_driver_in_process, invalidate_in_process};
use paddock_identity::identity::users;
use paddock_kernel::ids::UserId;
use paddock_kernel::ports::Ports;
use paddock_kernel::ports::items::{Condition, Query, SK, StoreError, TxOp, check_advances};
use paddock_kernel::retry::{is_conflict, retry_on_conflict};
use paddock_kernel::tables::Table;

/// Attempts per entry before a rewrite is left to the event's redelivery.
const ROUNDS: u32 = 5;

/// The boards (tracks' and cars') with an entry of `user_id` (from the driver's board index).
pub async fn boards_of(ports: &Ports, user_id: &UserId) -> Result<Vec<BoardId>, StoreError> {
    let mut boards = Vec::new();
    let mut cursor = None;
    loop {
        let page = ports
            .items
            .query(
                Query::partition(Table::Leaderboards, format!("USER#{user_id}"))
                    .begins_with(BOARD_INDEX_PREFIX)
                    .after(cursor.clone()),
            )
            .await?;
        boards.extend(
            page.items
                .iter()
                .filter_map(|item| BoardId::from_index_sk(item.get(SK)?.as_str()?)),
        );
        match page.next_cursor {
            Some(next) => {
                check_advances(cursor.as_deref(), &next)?;
                cursor = Some(next);
            }
            None => return Ok(boards),
        }
    }
}

/// Copies `user_id`'s current name and avatar onto each of the driver's entries that shows an
/// older profile version; answers how many entries changed. A deleted or unknown driver
/// changes nothing (the deletion job removes the entries).
pub async fn apply_profile(ports: &Ports, user_id: &UserId) -> Result<usize, StoreError> {
    let Some(profile) = users::get_stored(ports, user_id).await? else {
        return Ok(0);
    };
    if profile.deleted_at.is_some() {
        return Ok(0);
    }
    let mut changed = 0;
    for board in boards_of(ports, user_id).await? {
        if rewrite_entry(ports, &board, &profile).await? {
            changed += 1;
            invalidate_in_process(&board.track);
        }
    }
    forget_driver_in_process(user_id);
    Ok(changed)
}

/// Rewrites one entry and its rank row in one transaction, conditional on the entry being the
/// one read; answers whether it changed.
async fn rewrite_entry(
    ports: &Ports,
    board: &BoardId,
    profile: &users::StoredProfile,
) -> Result<bool, StoreError> {
    let key = board.entry_key(&profile.user.id);
    // A submission replaced the entry meanwhile: read it again.
    retry_on_conflict(ROUNDS, is_conflict, || async {
        let Some(item) = ports.items.get(Table::Leaderboards, &key).await? else {
            return Ok(false);
        };
        let mut row = StoredRow::from_item(item)?;
        if row.profile_version >= profile.version {
            return Ok(false);
        }
        row.row.display_name.clone_from(&profile.user.display_name);
        row.row.avatar_url.clone_from(&profile.user.avatar_url);
        row.profile_version = profile.version;
        let unchanged = Condition::eq(RANK_KEY, row.rank_key.as_str());
        let ops = vec![
            TxOp::Put {
                table: Table::Leaderboards,
                item: row.to_item(&key),
                condition: Some(unchanged.clone()),
            },
            TxOp::Put {
                table: Table::Leaderboards,
                item: row.rank_item(board),
                condition: Some(unchanged),
            },
        ];
        ports.items.transact(ops).await?;
        Ok(true)
    })
    .await
}
