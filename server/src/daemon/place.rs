//! Where the daemon lives: its runtime directory, the socket and lock in
//! it, and the build id that names a daemon of this build.
//!
//! The directory is `--runtime-dir DIR` / `PANESCAN_RUNTIME_DIR`, else
//! `$XDG_RUNTIME_DIR/panescan`, else `/tmp/panescan-UID`. It is made 0700
//! when missing, and refused unless it is a real directory (not a link)
//! owned by this user that no one else may enter: the check tmux makes of
//! its socket directory (tmux.c, `expand_paths` and `make_label`), since a
//! socket someone else placed there would be trusted with the session.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The variable that names the runtime directory.
pub const RUNTIME_DIR_ENV: &str = "PANESCAN_RUNTIME_DIR";
/// The socket every build tries first.
pub const SOCKET: &str = "panescan.sock";
/// The lock a daemon holds while it decides which socket is its own.
const LOCK: &str = "panescan.lock";

/// This user's uid.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The runtime directory: `asked` (the flag or the variable), else the
/// default one; not yet checked.
pub fn runtime_dir(asked: Option<&Path>) -> PathBuf {
    if let Some(dir) = asked.filter(|d| !d.as_os_str().is_empty()) {
        return std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(xdg) => PathBuf::from(xdg).join("panescan"),
        None => PathBuf::from(format!("/tmp/panescan-{}", uid())),
    }
}

/// Makes `dir` (0700) when it is missing, then checks it as tmux checks
/// its socket directory. The error says what is wrong and what to do.
pub fn ensure_private_dir(dir: &Path) -> Result<(), String> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot make {}: {e}", dir.display())),
    }
    check_private_dir(dir)
}

/// `dir` is a directory (not a link) of this user with no access for
/// group or others.
fn check_private_dir(dir: &Path) -> Result<(), String> {
    let meta =
        fs::symlink_metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "{} is not a directory: remove it, or pick another with --runtime-dir",
            dir.display()
        ));
    }
    if meta.uid() != uid() {
        return Err(format!(
            "{} belongs to uid {}, not to this user ({}): pick another with --runtime-dir",
            dir.display(),
            meta.uid(),
            uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} has mode {:o}: group and others may not enter it (chmod 700 {})",
            dir.display(),
            meta.mode() & 0o777,
            dir.display()
        ));
    }
    Ok(())
}

/// The socket every build tries first.
pub fn default_socket(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
}

/// The socket of a daemon of build `build`, used when another build's
/// daemon holds [`SOCKET`].
pub fn build_socket(dir: &Path, build: &str) -> PathBuf {
    dir.join(format!("panescan-{build}.sock"))
}

/// The start lock's path.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK)
}

/// This build's id: the version and the executable's size and change
/// time, hashed. Two builds of one commit differ (the file changed); a
/// daemon keeps the id it started with even when its file is replaced.
pub fn build_id() -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(crate::daemon::VERSION.as_bytes());
    if let Ok(meta) = std::env::current_exe().and_then(fs::metadata) {
        hash.update(meta.len().to_le_bytes());
        hash.update(meta.mtime().to_le_bytes());
        hash.update(meta.mtime_nsec().to_le_bytes());
        hash.update(meta.ino().to_le_bytes());
    }
    hash.finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "panescan-place-{name}-{}-{}",
            std::process::id(),
            crate::sync::nonce()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_missing_directory_is_made_private() {
        let dir = scratch("made");
        assert_eq!(ensure_private_dir(&dir), Ok(()));
        let mode = fs::metadata(&dir).map(|m| m.mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o700);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_directory_others_may_enter_is_refused() {
        let dir = scratch("open");
        assert_eq!(ensure_private_dir(&dir), Ok(()));
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o755));
        let err = ensure_private_dir(&dir).err().unwrap_or_default();
        assert!(err.contains("mode 755"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_link_is_refused_even_to_a_private_directory() {
        let dir = scratch("target");
        let link = scratch("link");
        assert_eq!(ensure_private_dir(&dir), Ok(()));
        let _ = std::os::unix::fs::symlink(&dir, &link);
        let err = ensure_private_dir(&link).err().unwrap_or_default();
        assert!(err.contains("not a directory"), "{err}");
        let _ = fs::remove_file(&link);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_build_id_is_stable_and_names_a_socket() {
        assert_eq!(build_id(), build_id());
        let sock = build_socket(Path::new("/r"), &build_id());
        assert!(sock.to_string_lossy().starts_with("/r/panescan-"));
    }
}
