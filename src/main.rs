//! The `burnrate` command: see `burnrate --help`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    burnrate::cli::run().await
}
