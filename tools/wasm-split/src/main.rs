//! `burnrate-wasm-split INPUT MAIN_OUT PKG_DIR OUTPUT_NAME`
//!
//! Cuts burnrate's wasm bundle into the chunks each lazy route loads, writes them and their
//! loader (`__wasm_split.______________________.js`) into the site's `pkg` directory, the
//! main module to MAIN_OUT for wasm-bindgen, and `__wasm_split_manifest.json`, which the
//! server reads to preload a page's chunks. These are the calls and file names
//! `cargo leptos build --split` makes; with them the release site needs no cargo-leptos,
//! whose install was most of a fresh machine's time to the first page (docs/PERFORMANCE.md).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// The loader's name as leptos looks it up when file names are not hashed.
const LOADER: &str = "./__wasm_split.______________________.js";
const MANIFEST: &str = "__wasm_split_manifest.json";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--version") {
        println!("burnrate-wasm-split {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let [input, main_out, pkg_dir, output_name] = args.as_slice() else {
        eprintln!("usage: burnrate-wasm-split INPUT.wasm MAIN_OUT.wasm PKG_DIR OUTPUT_NAME");
        return ExitCode::from(2);
    };
    match split(Path::new(input), Path::new(main_out), Path::new(pkg_dir), output_name) {
        Ok(chunks) => {
            println!("{chunks}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("burnrate-wasm-split: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Returns the chunk files written, one per line.
fn split(input: &Path, main_out: &Path, pkg_dir: &Path, output_name: &str) -> Result<String, String> {
    let wasm = std::fs::read(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    let main_module = format!("./{output_name}.js");
    let mut options = wasm_split_cli_support::Options::new(&wasm);
    options.output_dir = pkg_dir;
    options.main_out_path = main_out;
    options.main_module = &main_module;
    options.link_name = LOADER;
    let split =
        wasm_split_cli_support::transform(options).map_err(|e| format!("splitting {}: {e:?}", input.display()))?;
    // Sorted, so the same bundle always gives the same manifest (and the same site hash).
    let manifest: BTreeMap<_, _> = split.prefetch_map.into_iter().collect();
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| format!("writing the manifest: {e}"))?;
    let manifest_path = pkg_dir.join(MANIFEST);
    std::fs::write(&manifest_path, text).map_err(|e| format!("writing {}: {e}", manifest_path.display()))?;
    Ok(split
        .split_modules
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join("\n"))
}
