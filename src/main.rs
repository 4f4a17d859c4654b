//! The `burnrate` command: see `burnrate --help`.

/// Rendering a page allocates and frees many small strings and views from both worker
/// threads; glibc's allocator spent about 40 % of the server's CPU on that under load,
/// mimalloc's thread-local free lists much less (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    burnrate::cli::run().await
}
