//! Which `tmux` program panescan runs.
//!
//! Desktop MCP clients start servers with a short `PATH` (often only
//! `/usr/bin:/bin`) and little else of the user's environment, so a tmux
//! installed by Homebrew, MacPorts or Nix is "not installed" to a plain
//! `PATH` lookup. The program is, in order: the one named by `--tmux PATH`
//! or `PANESCAN_TMUX`; `tmux` on `PATH`; the first `tmux` in the places a
//! login shell would have had on its `PATH` ([`USUAL_DIRS`], the user's own
//! profile first, as a shell orders them). It is worked out once per
//! process.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where tmux is installed when it is not on `PATH`, in the order a login
/// shell's `PATH` puts them; `~` is the user's home.
pub const USUAL_DIRS: &[&str] = &[
    "~/.nix-profile/bin",
    "/run/current-system/sw/bin",
    "/opt/homebrew/bin",
    "/opt/local/bin",
    "/usr/local/bin",
    "/usr/bin",
];

/// The environment variable that names the tmux program.
pub const ENV: &str = "PANESCAN_TMUX";

/// No tmux program was found; says where panescan looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// The program named by `--tmux` / `PANESCAN_TMUX`, when one was.
    pub named: Option<PathBuf>,
    /// Every directory searched, `PATH`'s first.
    pub looked_in: Vec<PathBuf>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(named) = &self.named {
            return write!(
                f,
                "{} (from --tmux / {ENV}) is not an executable file",
                named.display()
            );
        }
        let dirs: Vec<String> = self
            .looked_in
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        write!(
            f,
            "tmux was not found on PATH nor in the usual places (looked in {}); name it with --tmux PATH or {ENV}",
            dirs.join(", ")
        )
    }
}

/// Finds the tmux program. `named` is `--tmux` / `PANESCAN_TMUX`, `path`
/// the `PATH` variable, `home` the user's home; `usual` the directories to
/// try after `PATH` (`~/` in them is `home`).
pub fn locate(
    named: Option<&OsStr>,
    path: Option<&OsStr>,
    home: Option<&Path>,
    usual: &[&str],
) -> Result<PathBuf, NotFound> {
    if let Some(named) = named.filter(|n| !n.is_empty()) {
        let named = PathBuf::from(named);
        // A bare name ("tmux3") is looked up on PATH, as a shell would.
        let found = if named.components().count() == 1 {
            path.into_iter()
                .flat_map(std::env::split_paths)
                .map(|d| d.join(&named))
                .find(|p| is_executable(p))
        } else {
            Some(named.clone()).filter(|p| is_executable(p))
        };
        return found.ok_or(NotFound {
            named: Some(named),
            looked_in: Vec::new(),
        });
    }
    let mut looked_in: Vec<PathBuf> = path.into_iter().flat_map(std::env::split_paths).collect();
    for dir in usual {
        let dir = match (dir.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            (Some(_), None) => continue,
            (None, _) => PathBuf::from(dir),
        };
        if !looked_in.contains(&dir) {
            looked_in.push(dir);
        }
    }
    looked_in
        .iter()
        .map(|d| d.join("tmux"))
        .find(|p| is_executable(p))
        .ok_or(NotFound {
            named: None,
            looked_in,
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

static PROGRAM: OnceLock<Result<PathBuf, NotFound>> = OnceLock::new();

/// Fixes the program from `--tmux` (or `PANESCAN_TMUX`, which clap folds
/// into it); call before anything runs tmux. Later calls change nothing.
pub fn init(named: Option<&OsStr>) -> Result<&'static Path, NotFound> {
    let found = PROGRAM.get_or_init(|| {
        let env: Option<OsString> = std::env::var_os(ENV);
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let path = std::env::var_os("PATH");
        let named = named.or(env.as_deref());
        locate(named, path.as_deref(), home.as_deref(), USUAL_DIRS)
    });
    match found {
        Ok(p) => Ok(p.as_path()),
        Err(e) => Err(e.clone()),
    }
}

/// The tmux program to run: found as [`init`] says. When none was found it
/// is the program named by `--tmux` / `PANESCAN_TMUX` (never another one
/// in its place), else plain `tmux`; running it then fails, and the error
/// says where panescan looked ([`not_found`]).
pub fn program() -> &'static Path {
    match PROGRAM.get() {
        Some(Ok(p)) => p,
        Some(Err(NotFound {
            named: Some(named), ..
        })) => named,
        Some(Err(_)) => Path::new("tmux"),
        None => {
            let _ = init(None);
            program()
        }
    }
}

/// Where panescan looked, when no tmux was found.
pub fn not_found() -> Option<NotFound> {
    init(None).err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(label: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("panescan-binary-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn program_in(dir: &Path, mode: u32) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join("tmux");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn path_first_then_the_usual_places_in_order() {
        let root = scratch("order");
        let home = root.join("home");
        let on_path = root.join("path");
        std::fs::create_dir_all(&on_path).unwrap();
        let usual = ["~/.nix-profile/bin", "/nonexistent/bin"];
        // Nothing anywhere: the error names PATH's dirs and the usual ones.
        let err = locate(None, Some(on_path.as_os_str()), Some(&home), &usual).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&on_path.display().to_string()), "{text}");
        assert!(
            text.contains(&home.join(".nix-profile/bin").display().to_string()),
            "{text}"
        );
        assert!(
            text.contains("/nonexistent/bin") && text.contains(ENV),
            "{text}"
        );
        // In the home profile only: found there.
        let nix = program_in(&home.join(".nix-profile/bin"), 0o755);
        let found = locate(None, Some(on_path.as_os_str()), Some(&home), &usual).unwrap();
        assert_eq!(found, nix);
        // On PATH too: PATH wins.
        let first = program_in(&on_path, 0o755);
        let found = locate(None, Some(on_path.as_os_str()), Some(&home), &usual).unwrap();
        assert_eq!(found, first);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_named_program_must_exist_and_be_executable() {
        let root = scratch("named");
        let not_exec = program_in(&root.join("a"), 0o644);
        let err = locate(Some(not_exec.as_os_str()), None, None, &[]).unwrap_err();
        assert_eq!(err.named.as_deref(), Some(not_exec.as_path()));
        assert!(err.to_string().contains("not an executable"), "{err}");
        let good = program_in(&root.join("b"), 0o755);
        assert_eq!(
            locate(Some(good.as_os_str()), None, None, &[]).unwrap(),
            good
        );
        // A bare name is looked up on PATH; a named program is never
        // replaced by another one found elsewhere.
        let path = root.join("b").into_os_string();
        let found = locate(Some(OsStr::new("tmux")), Some(&path), None, &[]).unwrap();
        assert_eq!(found, good);
        let missing = root.join("c/tmux");
        assert!(locate(Some(missing.as_os_str()), Some(&path), None, &[]).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
