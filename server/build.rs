//! Records which commit the binary was built from, for `panescan --version`:
//! from git when building in a checkout (`cargo build`, `cargo install
//! --path`, `cargo install --git`), from `.cargo_vcs_info.json` in a
//! package cargo made (`cargo install panescan`), and nothing otherwise (a
//! source tarball): the version then stands alone.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The commit in `.cargo_vcs_info.json` (`{"git": {"sha1": "..."}}`).
fn packaged_commit(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let after = text.split("\"sha1\"").nth(1)?;
    let sha: String = after
        .chars()
        .skip_while(|c| !c.is_ascii_hexdigit())
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() >= 12).then(|| sha[..12].to_owned())
}

fn main() {
    let dir_text = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&dir_text);
    let commit = match git(dir, &["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => {
            // Build again when HEAD moves (a commit, a checkout).
            for path in ["HEAD", "packed-refs"] {
                if let Some(p) = git(dir, &["rev-parse", "--git-path", path]) {
                    println!("cargo:rerun-if-changed={}", dir.join(p).display());
                }
            }
            if let Some(head) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
                if let Some(p) = git(dir, &["rev-parse", "--git-path", &head]) {
                    println!("cargo:rerun-if-changed={}", dir.join(p).display());
                }
            }
            Some(commit)
        }
        None => packaged_commit(dir),
    };
    println!("cargo:rerun-if-changed=build.rs");
    println!(
        "cargo:rustc-env=PANESCAN_VERSION={}",
        match commit {
            Some(c) => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
            None => env!("CARGO_PKG_VERSION").to_owned(),
        }
    );
}
