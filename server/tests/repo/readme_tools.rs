//! The README's tool table is the registry's: a renamed, added or retiered
//! tool must show up there.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use panescan::testing::config::Tier;
use panescan::testing::tools::registry::Registry;

const BEGIN: &str = "<!-- tools:begin -->\n";
const END: &str = "<!-- tools:end -->";

#[test]
fn readme_tool_table_matches_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("README has the tools:begin marker")
        + BEGIN.len();
    let end = readme.find(END).expect("README has the tools:end marker");
    let table = Registry::for_tier(Tier::Destructive).markdown_table();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        let updated = format!("{}{}{}", &readme[..start], table, &readme[end..]);
        std::fs::write(path, updated).unwrap();
        return;
    }
    assert_eq!(
        &readme[start..end],
        table,
        "README tool table is stale: run UPDATE_SNAPSHOTS=1 cargo test -p panescan --test repo readme_tools::"
    );
}
