//! Real terminal output, embedded in the binary so `panescan demo` and
//! `panescan bench` need nothing but tmux.
//!
//! The files live in `corpus/` at the top of the repository (see its
//! README for how each was recorded and `corpus/regenerate.sh`).

/// The corpus files as text, in a fixed order.
pub fn sources() -> Vec<&'static str> {
    vec![SAMPLE]
}

const SAMPLE: &str = "   Compiling panescan v0.1.0\nerror[E0425]: cannot find value `y` in this scope\n --> src/main.rs:4:13\nwarning: unused variable: `x`\ntest tests::it_works ... FAILED\nTraceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nZeroDivisionError: division by zero\nthe quick brown fox jumps over the lazy dog\n";
