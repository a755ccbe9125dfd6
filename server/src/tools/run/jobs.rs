//! The shell's other jobs while a command runs: which were running when it
//! was typed (read from this machine's `/proc`), and the notices the shell
//! prints when one of them ends (`[1]+  Done  sleep 1`), which land in the
//! command's output although the command did not print them.
//!
//! What must hold: a line is taken out of the output as a notice only when
//! it has the shell's notice shape and a job running at the start has
//! ended, and never more lines than jobs ended; what is taken out is
//! handed back (the answer's `job_notices`), never dropped. A job's own
//! prints cannot be told from the command's: the answer says how many jobs
//! ran alongside instead. Every `/proc` read is bounded; what cannot be
//! read is `None` and nothing is taken out.

use std::collections::BTreeSet;

use super::seat::{read_proc, stat};

/// Most children of a shell looked at (a shell with more jobs than this
/// is no interactive shell an agent types into).
const MAX_CHILDREN: usize = 4096;
/// Most threads of a shell whose children are read (a child belongs to
/// the thread that forked it; shells fork from one).
const MAX_THREADS: usize = 64;

/// The process groups of the jobs the shell `shell_pid` runs in the
/// background now (its children outside its own group, zombies, which have
/// ended, left out); `None` when `/proc` cannot tell.
pub fn running(shell_pid: u32) -> Option<BTreeSet<i64>> {
    let own = stat(shell_pid)?;
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{shell_pid}/task"))
        .ok()?
        .take(MAX_THREADS)
    {
        let task = task.ok()?.file_name();
        let task = task.to_str()?;
        children.extend(read_proc(&format!(
            "/proc/{shell_pid}/task/{task}/children"
        ))?);
        children.push(b' ');
    }
    let children = std::str::from_utf8(&children).ok()?;
    let groups = children
        .split_ascii_whitespace()
        .take(MAX_CHILDREN)
        .filter_map(|pid| stat(pid.parse().ok()?))
        .filter(|s| s.pgrp != own.pgrp && s.session == own.session && s.state != b'Z')
        .map(|s| s.pgrp)
        .collect();
    Some(groups)
}

/// How many of the jobs `before` have ended by `now` (both from
/// [`running`]).
pub fn ended(before: &BTreeSet<i64>, now: &BTreeSet<i64>) -> usize {
    before.difference(now).count()
}

/// Takes out of `lines` at most `at_most` job notices, the first ones,
/// and returns them in order. fish opens its notice with an empty line:
/// that goes with it.
pub fn take_notices(lines: &mut Vec<String>, at_most: usize) -> Vec<String> {
    let mut taken = Vec::new();
    let mut kept: Vec<String> = Vec::with_capacity(lines.len());
    for line in lines.drain(..) {
        if taken.len() < at_most && is_notice(&line) {
            if line.starts_with(FISH_NOTICE) && kept.last().is_some_and(|l| l.is_empty()) {
                kept.pop();
            }
            taken.push(line);
        } else {
            kept.push(line);
        }
    }
    *lines = kept;
    taken
}

/// How fish's notices start.
const FISH_NOTICE: &str = "fish: Job ";

/// How a job's end is worded, with a number after it: bash `Exit 3`,
/// zsh `exit 3`, a signal without a name.
const NUMBERED_STATES: [&str; 3] = ["exit", "user defined signal", "signal"];
/// How a job's end is worded otherwise: bash (`Done`, a signal's name),
/// zsh (`done`, a signal's name in lower case).
const STATES: [&str; 18] = [
    "done",
    "terminated",
    "killed",
    "hangup",
    "interrupt",
    "quit",
    "aborted",
    "abort",
    "segmentation fault",
    "broken pipe",
    "alarm clock",
    "alarm",
    "bus error",
    "floating point exception",
    "illegal instruction",
    "illegal hardware instruction",
    "trace/breakpoint trap",
    "trace trap",
];

/// Whether `line` has the shape of a shell's notice that a job ended:
/// bash `[1]+  Done                    sleep 1`, zsh
/// `[2]  + exit 3     false` (a pid before the state with LONG_LIST_JOBS),
/// fish `fish: Job 1, 'sleep 1 &' has ended`.
fn is_notice(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix(FISH_NOTICE) {
        let number = rest.split(',').next().unwrap_or_default();
        return is_number(number)
            && (rest.ends_with("' has ended") || rest.contains("' terminated by signal "));
    }
    let Some(rest) = line.strip_prefix('[') else {
        return false;
    };
    let Some((number, rest)) = rest.split_once(']') else {
        return false;
    };
    if !is_number(number) {
        return false;
    }
    // bash: `+`, `-` or a space right after the bracket; zsh: spaces, then
    // `+`, `-` or nothing.
    let rest = rest.trim_start_matches(' ');
    let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest).trim_start();
    // zsh's LONG_LIST_JOBS puts the pid first.
    let rest = match rest.split_once(' ') {
        Some((pid, after)) if is_number(pid) => after.trim_start(),
        _ => rest,
    };
    let lower = rest.to_ascii_lowercase();
    let named = STATES.iter().any(|state| {
        lower
            .strip_prefix(state)
            .is_some_and(|after| after.is_empty() || after.starts_with([' ', '(']))
    });
    named
        || NUMBERED_STATES
            .iter()
            .any(|state| lower.strip_prefix(state).is_some_and(state_number))
}

/// ` 3` after `exit`, `signal` or `user defined signal`: a number, then
/// the end or a space.
fn state_number(after: &str) -> bool {
    after
        .strip_prefix(' ')
        .and_then(|a| a.split(' ').next())
        .is_some_and(is_number)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shells_notices_are_notices() {
        for line in [
            "[1]+  Done                    sleep 1",
            "[1]-  Done                    ( sleep 1; echo late )",
            "[2]   Exit 3                  false",
            "[3]+  Terminated              sleep 100",
            "[1]+  Killed                  sleep 100",
            "[1]+  Segmentation fault      (core dumped) ./a.out",
            "[2]  + done       sleep 1",
            "[1]  - exit 3     false",
            "[3]    done       sleep 0.3",
            "[1]  + terminated  sleep 100",
            "[1]  + 28113 done       sleep 1",
            "[1]  + interrupt  sleep 100",
            "fish: Job 1, 'sleep 1 &' has ended",
            "fish: Job 2, 'sleep 100 &' terminated by signal SIGTERM (Polite quit request)",
        ] {
            assert!(is_notice(line), "{line:?}");
        }
    }

    #[test]
    fn output_that_only_looks_close_is_not_a_notice() {
        for line in [
            "",
            "[1] 28113",
            "[1]+  Running                 sleep 100 &",
            "[x]+  Done                    sleep 1",
            "[]  Done",
            "Done",
            "[1]+  Doney",
            "[1]+  Exit x",
            "[1]+  Exit",
            "[1]+  Signal",
            "[1] abc done",
            "[12345678901]+  Done  sleep 1",
            "fish: Job x, 'sleep' has ended",
            "fish: Job 1, 'sleep 1 &' has started",
            "x [1]+  Done",
        ] {
            assert!(!is_notice(line), "{line:?}");
        }
    }

    #[test]
    fn no_more_notices_are_taken_than_jobs_ended() {
        let mut lines: Vec<String> = [
            "late",
            "[1]-  Done                    sleep 1",
            "y",
            "[2]+  Done                    sleep 0.3",
        ]
        .map(String::from)
        .to_vec();
        let mut one = lines.clone();
        assert_eq!(
            take_notices(&mut one, 1),
            ["[1]-  Done                    sleep 1"]
        );
        assert_eq!(
            one,
            ["late", "y", "[2]+  Done                    sleep 0.3"]
        );
        let taken = take_notices(&mut lines, 5);
        assert_eq!(taken.len(), 2);
        assert_eq!(lines, ["late", "y"]);
        let mut fish: Vec<String> = ["", "y", "", "fish: Job 1, 'sleep 1 &' has ended"]
            .map(String::from)
            .to_vec();
        assert_eq!(take_notices(&mut fish, 1).len(), 1);
        assert_eq!(fish, ["", "y"]);
        let mut none = vec!["[1]+  Done  sleep 1".to_owned()];
        assert!(take_notices(&mut none, 0).is_empty());
        assert_eq!(none.len(), 1);
    }

    /// Only fish's notice takes the empty line before it: an empty line
    /// before bash's or zsh's is the command's own.
    #[test]
    fn only_fishs_notice_takes_the_empty_line_before_it() {
        let mut lines: Vec<String> = ["a", "", "[1]+  Done                    sleep 1"]
            .map(String::from)
            .to_vec();
        assert_eq!(take_notices(&mut lines, 1).len(), 1);
        assert_eq!(lines, ["a", ""]);
        let mut lines: Vec<String> = ["a", "", "[1]  + done       sleep 1"]
            .map(String::from)
            .to_vec();
        assert_eq!(take_notices(&mut lines, 1).len(), 1);
        assert_eq!(lines, ["a", ""]);
        // fish's, after a line that is not empty: nothing else goes.
        let mut lines: Vec<String> = ["a", "fish: Job 1, 'sleep 1 &' has ended"]
            .map(String::from)
            .to_vec();
        assert_eq!(take_notices(&mut lines, 1).len(), 1);
        assert_eq!(lines, ["a"]);
    }

    #[test]
    fn jobs_ended_are_those_gone_since() {
        let before: BTreeSet<i64> = [10, 20, 30].into();
        let now: BTreeSet<i64> = [20, 40].into();
        assert_eq!(ended(&before, &now), 2);
        assert_eq!(ended(&now, &before), 1);
    }

    #[test]
    fn a_background_child_is_a_job_and_this_process_is_not() {
        // This test process leads no shell; its children run in its own
        // group, so none is a job, until one gets a group of its own.
        use std::os::unix::process::CommandExt;
        let me = std::process::id();
        let mut same = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let mut own = std::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        let groups = running(me);
        // The group `same` runs in: this process's (a pid is no group id).
        let same_group = stat(same.id()).map(|s| s.pgrp);
        let _ = (same.kill(), own.kill(), same.wait(), own.wait());
        let groups = groups.expect("/proc readable");
        assert_eq!(same_group, stat(me).map(|s| s.pgrp));
        let same_group = same_group.unwrap();
        assert!(groups.contains(&i64::from(own.id())), "{groups:?}");
        assert!(!groups.contains(&same_group), "{groups:?}");
    }
}
