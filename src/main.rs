//! `tidings`: a self-hosted, multi-user RSS / Atom / JSON Feed reader in one binary.

fn main() -> std::process::ExitCode {
    tidings::cli::main()
}
