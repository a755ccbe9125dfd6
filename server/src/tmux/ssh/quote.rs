//! Quoting for the remote shell. ssh joins the words after the destination
//! with spaces and hands the line to the remote user's login shell, so
//! every word panescan sends is single-quoted for a POSIX shell: inside
//! `'...'` nothing is special, and a `'` is written `'\''`. A NUL cannot be
//! passed at all and is refused.

/// `word` quoted for a POSIX shell, or `None` if it holds a NUL.
fn posix_word(word: &str) -> Option<String> {
    if word.contains('\0') {
        return None;
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    Some(out)
}

/// `exec` and the words, each quoted: one line for the remote shell.
pub fn command_line<'a>(words: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut line = String::from("exec");
    for w in words {
        line.push(' ');
        line.push_str(&posix_word(w)?);
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh -c 'printf "%s\n" LINE'` prints: the words back, one a line.
    fn through_sh(words: &[&str]) -> Vec<String> {
        let quoted: Vec<String> = words.iter().map(|w| posix_word(w).unwrap()).collect();
        let script = format!("printf '%s\\n' {}", quoted.join(" "));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_shell_gets_every_word_back_unchanged() {
        let words = [
            "plain",
            "it's",
            "$(touch /nonexistent/x)",
            "`id`",
            "a;b|c&d",
            "\"q\"",
            "\\",
            "*",
            "~",
            "''",
            "#x",
            "é",
        ];
        assert_eq!(through_sh(&words), words);
        assert!(posix_word("a\0b").is_none());
    }

    proptest::proptest! {
        #[test]
        fn any_word_survives_sh(word in "[^\\x00\\n\\r]{0,24}") {
            proptest::prop_assert_eq!(through_sh(&[&word]), vec![word.clone()]);
        }
    }
}
