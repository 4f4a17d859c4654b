#!/usr/bin/env bash
# The release build: the server binary and the site (`target/site`), as the Dockerfile,
# scripts/run.sh and scripts/test.sh make it.
#
# --split gives every page its own wasm chunks (lazy routes, see docs/ARCHITECTURE.md);
# --precompress stores a brotli (.br) and a gzip (.gz) copy of every site file, which the
# server sends as they are. cargo-leptos writes its .gz with a weaker deflater than gzip's
# own, so they are redone with `gzip -9` for browsers that do not accept brotli (Chromium
# on plain http).
#
# cargo-leptos runs wasm-bindgen and wasm-opt over every wasm chunk on each release build,
# even when nothing changed (about 4 minutes on 2 cores). So the site is rebuilt only when
# its inputs changed since the last build (the sources, styles, public files, the lock file,
# .cargo/config.toml, the tool and compiler versions, and the RUSTFLAGS, CARGO_PROFILE_* and
# LEPTOS_* variables) or the site itself was replaced; otherwise only the server is (a
# no-op when it too is current).
set -euo pipefail
cd "$(dirname "$0")/.."

# wasm-opt from npm binaryen: Debian's older build breaks hydration.
export PATH="$PWD/end2end/node_modules/.bin:$PATH"

# Kept beside the site, not in it: the server serves target/site.
stamp=target/.site-inputs.sha256
inputs="$(
  {
    find src style public Cargo.toml Cargo.lock .cargo -type f -print0 | sort -z | xargs -0 sha256sum
    cargo leptos --version
    wasm-bindgen --version
    wasm-opt --version
    rustc --version
    env | grep -E '^(RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_PROFILE_|LEPTOS_)' | sort || true
  } | sha256sum | cut -d' ' -f1
)"
# The site as built, so a site another build replaced (`cargo leptos watch`, a debug build)
# is noticed even when the inputs did not change.
site_hash() { find target/site -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1; }
if [ -d target/site/pkg ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs $(site_hash)" ]; then
  echo "build-release: the site is current (inputs unchanged); building the server only" >&2
  cargo leptos build --release --split --precompress --server-only
else
  rm -f "$stamp"
  cargo leptos build --release --split --precompress
  find target/site -type f ! -name '*.gz' ! -name '*.br' -exec gzip -9 --keep --force --no-name {} +
  echo "$inputs $(site_hash)" > "$stamp"
fi
