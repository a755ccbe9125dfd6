//! `panescan search --journal` / `--since`: what a search across time adds
//! to grep's manners (the search itself is search_panes with `journal`,
//! `since_time` and `until_time`: the same semantics as for a client).
//!
//! The journal's own hits go to stdout after tmux's, one line each:
//! `TIME %3 session:window: text` (`(gone)` after the pane when it no
//! longer exists); its gaps and unreadable segments go to stderr.

use std::io::Write;

use crate::tools::search::SearchPanesResult;

/// Prints the journal's part of `result`.
pub fn print_across(result: &SearchPanesResult) {
    let mut out = std::io::stdout().lock();
    for hit in &result.journal_matches {
        let gone = if hit.pane_gone { " (gone)" } else { "" };
        let written = writeln!(
            out,
            "{} {}{gone} {}:{}: {}",
            hit.time, hit.pane_id, hit.session_name, hit.window, hit.text
        );
        if written.is_err() {
            break; // A closed pipe (`| head`).
        }
    }
    for gap in &result.journal_gaps {
        eprintln!(
            "gap {} .. {} {}: {}",
            gap.from, gap.to, gap.pane_id, gap.reason
        );
    }
    for s in &result.journal_skipped {
        eprintln!("panescan search: skipped {s}");
    }
}
