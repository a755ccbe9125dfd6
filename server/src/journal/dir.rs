//! The journal's directory: where it is, made 0700 when missing, refused
//! when another user owns it or others may enter it.
//!
//! Pane text may hold what the user typed and printed: a directory someone
//! else owns or may read would hand it to them, and one someone else may
//! write could feed a search forged lines. The same rule as the daemon's
//! runtime directory (tmux's for its socket directory).

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The default directory: `$XDG_STATE_HOME/panescan/journal`, else
/// `~/.local/state/panescan/journal`; `None` without either variable.
pub fn default_dir() -> Option<PathBuf> {
    let var = |k| std::env::var_os(k).filter(|v| !v.is_empty());
    let state = var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(state.join("panescan").join("journal"))
}

/// Makes `dir` (and missing parents, 0700) when it is missing, then checks
/// it ([`check`]).
pub fn ensure(dir: &Path) -> Result<(), String> {
    if fs::symlink_metadata(dir).is_err() {
        DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(dir)
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    check(dir)
}

/// `dir` is a directory (not a link) of this user with no access for group
/// or others. The error says what is wrong and what to do.
pub fn check(dir: &Path) -> Result<(), String> {
    let meta =
        fs::symlink_metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "journal directory {} is not a directory: pick another with --journal-dir",
            dir.display()
        ));
    }
    let me = rustix::process::getuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "journal directory {} belongs to uid {}, not to this user ({me}): pick another with --journal-dir",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "journal directory {} has mode {:o}: group and others may not enter it (chmod 700 {})",
            dir.display(),
            meta.mode() & 0o777,
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn made_private_and_open_ones_refused() {
        let base = std::env::temp_dir().join(format!("pj-dir-{}", std::process::id()));
        let dir = base.join("a/b/journal");
        ensure(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
        let err = ensure(&dir).unwrap_err();
        assert!(err.contains("mode 750"), "{err}");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        let file = base.join("file");
        fs::write(&file, b"").unwrap();
        assert!(check(&file).unwrap_err().contains("not a directory"));
        fs::remove_dir_all(&base).unwrap();
    }
}
