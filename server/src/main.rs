//! The `panescan` binary: see [`panescan::main`].

fn main() -> std::process::ExitCode {
    panescan::main()
}
