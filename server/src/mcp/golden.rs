//! Whole `search_panes` answers, byte for byte: the results of
//! `tools::search::golden` answered under several ceilings in both
//! protocol eras. The answers in `tests/snapshots/search_answers/` are what
//! the server wrote for these results before search answers were written
//! line by line; any change to how a result is encoded or cut must leave
//! them as they are (`UPDATE_SNAPSHOTS=1` rewrites them, for a change of
//! the answer itself).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::protocol::{self, Era};
use super::response::Responses;
use crate::tools::registry;
use crate::tools::search::golden::cases;
use crate::tools::search::{SearchPanes, SearchPanesResult};

/// The answer lines of one result: under each ceiling, in both eras.
fn answers(result: &SearchPanesResult, ceilings: &[usize]) -> Vec<String> {
    let modern = Era::Modern {
        version: protocol::MODERN_VERSIONS[0].to_owned(),
    };
    let mut lines = Vec::new();
    for &ceiling in ceilings {
        for (era, id) in [(Era::Handshake, json!(7)), (modern.clone(), json!("q\"1"))] {
            let responses = Responses::new(ceiling);
            let room = responses.room_for_result(&id, &era);
            let line = match registry::encode::<SearchPanes>(result.clone(), room, ceiling) {
                Ok(out) => responses.tool_result(&id, &era, &out),
                Err(e) => responses.tool_error(&id, &era, &e.message),
            };
            lines.push(line);
        }
    }
    lines
}

fn snapshot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/search_answers")
        .join(format!("{name}.jsonl"))
}

#[test]
fn answers_are_byte_identical_to_the_recorded_ones() {
    for (name, result, ceilings) in cases() {
        let lines = answers(&result, &ceilings);
        for line in &lines {
            let parsed: Value = serde_json::from_str(line).unwrap();
            assert!(parsed.get("result").is_some(), "{name}: {line}");
        }
        let path = snapshot(name);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            continue;
        }
        let recorded = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 records it)", path.display()));
        let recorded: Vec<&str> = recorded.lines().collect();
        assert_eq!(recorded.len(), lines.len(), "{name}: number of answers");
        for (i, (want, got)) in recorded.iter().zip(&lines).enumerate() {
            if *want != got.as_str() {
                let at = want
                    .bytes()
                    .zip(got.bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(want.len().min(got.len()));
                panic!(
                    "{name}, answer {i}: differs at byte {at} (lengths {} and {}):\nrecorded ...{}\nnow      ...{}",
                    want.len(),
                    got.len(),
                    &want[want.floor_char_boundary(at.saturating_sub(80))..want.floor_char_boundary((at + 80).min(want.len()))],
                    &got[got.floor_char_boundary(at.saturating_sub(80))..got.floor_char_boundary((at + 80).min(got.len()))],
                );
            }
        }
    }
}
