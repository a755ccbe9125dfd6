//! The `panescan` binary: see [`panescan::cli`].

fn main() -> std::process::ExitCode {
    panescan::cli::main()
}
