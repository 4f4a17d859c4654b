#!/usr/bin/env bash
# The release build: the server binary and the site (`target/site`), as the Dockerfile,
# scripts/run.sh and scripts/test.sh make it.
#
# --split gives every page its own wasm chunks (lazy routes, see docs/ARCHITECTURE.md);
# --precompress stores a brotli (.br) and a gzip (.gz) copy of every site file, which the
# server sends as they are. cargo-leptos writes its .gz with a weaker deflater than gzip's
# own, so they are redone with `gzip -9` for browsers that do not accept brotli (Chromium
# on plain http).
set -euo pipefail
cd "$(dirname "$0")/.."

# wasm-opt from npm binaryen: Debian's older build breaks hydration.
export PATH="$PWD/end2end/node_modules/.bin:$PATH"
cargo leptos build --release --split --precompress
find target/site -type f ! -name '*.gz' ! -name '*.br' -exec gzip -9 --keep --force --no-name {} +
