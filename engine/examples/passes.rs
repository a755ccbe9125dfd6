#![allow(clippy::unwrap_used)]
use std::time::Instant;
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut base = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "txt") {
            base.extend(std::fs::read(p).unwrap());
        }
    }
    let mut hay = Vec::new();
    while hay.len() < 100 << 20 {
        hay.extend_from_slice(&base);
    }
    let gb = hay.len() as f64 / 1e9;
    let t = |name: &str, f: &dyn Fn() -> usize| {
        let mut best = f64::MAX;
        let mut r = 0;
        for _ in 0..5 {
            let s = Instant::now();
            r = f();
            best = best.min(s.elapsed().as_secs_f64());
        }
        println!("{name:30} {:6.2} GB/s  ({r})", gb / best);
    };
    t("memchr esc", &|| memchr::memchr(0x1b, &hay).unwrap_or(0));
    t("memmem crlf", &|| {
        memchr::memmem::find(&hay, b"\r\n").unwrap_or(0)
    });
    t("memchr count nl", &|| {
        memchr::memchr_iter(b'\n', &hay).count()
    });
    t("bytecount-ish nl", &|| {
        hay.iter().filter(|&&b| b == b'\n').count()
    });
    let f = memchr::memmem::Finder::new("ParseIntError");
    t("memmem rare", &|| f.find_iter(&hay).count());
    let ac = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(["filenotfounderror"])
        .unwrap();
    t("ac ci", &|| ac.find_iter(&hay).count());
    for (p, ci) in [
        ("ParseIntError", true),
        ("ParseIntError", false),
        (r"error\[E\d+\]", true),
        (r"error\[E\d+\]", false),
        ("error", true),
    ] {
        let m = panescan_engine::Matcher::new(
            &[p],
            panescan_engine::PatternOptions {
                regex: true,
                match_case: !ci,
            },
        )
        .unwrap();
        t(&format!("matcher {p} ci={ci}"), &|| {
            let mut n = 0;
            let mut at = 0;
            while let Some(e) = m.find_hit(&hay, at) {
                n += 1;
                at = e.max(at + 1);
            }
            n
        });
    }
}
