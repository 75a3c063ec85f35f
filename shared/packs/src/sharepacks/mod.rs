//! Share packs: ZIPs a driver builds in the desktop app (setups, reference laps, notes) to give
//! to team mates. Anyone signed in who has a pack's id may read and download it; only its owner
//! lists and deletes it.
//!
//! Key layout (table `sharepacks`):
//! - `PACK#<id>` / `META`: the pack and its owner; `state` is `pending` (with an expiry) while
//!   its upload URL takes bytes, `checking` (still expiring) while they are checked, then
//!   `ready`;
//! - `OWNER#<user id>` / `<created at>#<id>`: the owner's list, newest last;
//! - `USAGE#<user id>` / `USAGE`: packs and bytes the owner holds (the quotas).
//!
//! Objects live in the blob store under `packs/<id>.zip`; bytes PUT to an upload URL wait under
//! `uploads/<id>.zip` until the pack is completed. `complete` first closes the upload (state
//! `checking`), then takes those bytes out of reach of later PUTs (locally the file itself
//! moves to a private staging directory; S3 copies it to `uploads/<id>.checked.zip`), checks
//! them and publishes exactly them (locally that file moves into `packs/`; S3 copies the held
//! object, pinned to its ETag). An unpublished item is written before any object, so a crash
//! in between leaves an expiring item that the retention sweep removes together with the
//! objects (an expired unpublished pack can never be published).

pub mod packs;
pub mod upload_urls;

use paddock_config::config::SharepackSettings;
use paddock_kernel::ids::SharePackId;

/// The caps of the ZIP check ([`zip_check::check`]) that `settings` configure.
pub fn zip_limits(settings: &SharepackSettings) -> zip_check::Limits {
    zip_check::Limits {
        max_entries: settings.max_entries,
        max_uncompressed_bytes: settings.max_uncompressed_bytes,
        max_ratio: settings.max_ratio,
    }
}

/// The blob key of pack `id`'s object.
pub fn blob_key(id: &SharePackId) -> String {
    format!("packs/{id}.zip")
}

/// Where the bytes PUT to pack `id`'s upload URL wait until it is completed (a lifecycle rule
/// in AWS expires what is left there).
pub fn upload_key(id: &SharePackId) -> String {
    format!("uploads/{id}.zip")
}

/// Where S3 holds what arrived for pack `id` while `complete` checks it: a server-side copy
/// under a key no upload URL is signed for, so a PUT during the check changes nothing.
pub fn held_key(id: &SharePackId) -> String {
    format!("uploads/{id}.checked.zip")
}

/// Every object pack `id` may have (for removals).
pub fn object_keys(id: &SharePackId) -> [String; 3] {
    [blob_key(id), upload_key(id), held_key(id)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_settings_give_the_checks_default_limits() {
        assert_eq!(
            zip_limits(&SharepackSettings::default()),
            zip_check::Limits::default()
        );
    }
}
