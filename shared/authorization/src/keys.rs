//! The keys of an app's rows, which the apps and the grants both write (`tokens` table).

use paddock_kernel::ports::items::Key;

/// Partition prefix of an app's rows, and sort-key prefix of an owner's list of apps.
pub(crate) const APP_PREFIX: &str = "APP#";

/// The key of an app's record.
pub(crate) fn app_key(client_id: &str) -> Key {
    Key::new(format!("{APP_PREFIX}{client_id}"), "APP")
}
