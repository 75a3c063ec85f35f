//! Files and directories of the data directory, readable by the server's own user only: the
//! database, the blobs and the secrets hold every driver's data and the signing key, which
//! other accounts on the machine have no business reading. What an earlier version created
//! more open is narrowed when the server opens it.

use std::fs::{DirBuilder, File, OpenOptions};
use std::path::Path;

/// Creates `dir` and any missing parents with mode 0700 (directories that exist keep theirs).
pub(crate) fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// A new file at `path`, created exclusively (it must not exist) with mode 0600.
pub(crate) fn create_new(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Opens `path` for writing, creating it with mode 0600 when missing (kept as it is when not).
pub(crate) fn open_or_create(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Narrows `path` (a file to 0600, a directory to 0700) when its group or others may use it,
/// as files created by earlier versions could; a missing path is left alone.
pub(crate) fn restrict(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        // A link is not followed: what it points at is not ours to change.
        if metadata.file_type().is_symlink() || metadata.permissions().mode() & 0o077 == 0 {
            return Ok(());
        }
        let mode = if metadata.is_dir() { 0o700 } else { 0o600 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}
