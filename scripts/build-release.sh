#!/usr/bin/env bash
# The release build: the server binary (target/release/burnrate) and the site (target/site),
# as the Dockerfile, scripts/run.sh and scripts/test.sh make it.
#
# The two build side by side: each spends minutes in single-threaded steps (the bundle's
# LTO on one codegen unit, the server's final link) that the other fills on 2 cores.
# scripts/build-site.sh makes the site: per-page wasm chunks (lazy routes, see
# docs/ARCHITECTURE.md) and a gzip and a brotli copy of every file, which the server sends
# as they are.
#
# wasm-bindgen and wasm-opt over every chunk take minutes even when nothing changed, so the
# site is rebuilt only when its inputs changed since the last build (the sources, styles,
# public files, the lock file, .cargo/config.toml, the build scripts, the site tools'
# sources and lock files, the tool and compiler versions, and the RUSTFLAGS,
# CARGO_PROFILE_* and LEPTOS_* variables) or the site itself was replaced; otherwise only
# the server is built (a no-op when it too is current).
#
# `--site-only` builds the site alone: scripts/test.sh serves it from the debug server its
# tests already built.
set -euo pipefail
site_only=false
if [ "${1:-}" = "--site-only" ]; then
  site_only=true
fi
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/leptos-env.sh
source scripts/lib/leptos-env.sh

# Kept beside the site, not in it: the server serves target/site.
stamp=target/.site-inputs.sha256
inputs="$(
  {
    find src style public Cargo.toml Cargo.lock .cargo scripts/build-site.sh scripts/lib \
      tools/wasm-split/Cargo.toml tools/wasm-split/Cargo.lock tools/wasm-split/src tools/site/package-lock.json \
      -type f -print0 | sort -z | xargs -0 sha256sum
    burnrate-wasm-split --version
    wasm-bindgen --version
    wasm-opt --version
    esbuild --version
    lightningcss --version
    rustc --version
    env | grep -E '^(RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_PROFILE_|LEPTOS_)' | sort || true
  } | sha256sum | cut -d' ' -f1
)"
# The site as built, so a site another build replaced (`cargo leptos watch`, a debug build)
# is noticed even when the inputs did not change.
site_hash() { find target/site -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1; }

server_log=target/.server-build.log
mkdir -p target
if ! $site_only; then
  # Its own process group (setsid): a failed site build (set -e) or Ctrl-C stops all of it,
  # rustc and the linker included, not only cargo.
  setsid "${SERVER_BUILD[@]}" >"$server_log" 2>&1 &
  server_pid=$!
  trap 'kill -- -"$server_pid" 2>/dev/null || true' EXIT
  trap 'exit 130' INT TERM
  echo "build-release: building the server in the background (log: $server_log)" >&2
fi

if [ -d target/site/pkg ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs $(site_hash)" ]; then
  echo "build-release: the site is current (inputs unchanged)" >&2
else
  rm -f "$stamp"
  scripts/build-site.sh
  echo "$inputs $(site_hash)" > "$stamp"
fi

if $site_only; then
  echo "build-release: target/site is ready" >&2
  exit 0
fi
if ! wait "$server_pid"; then
  cat "$server_log" >&2
  echo "build-release: the server's build failed (its output is above)" >&2
  exit 1
fi
trap - EXIT INT TERM
tail -n 1 "$server_log" >&2
echo "build-release: target/release/burnrate and target/site are ready" >&2
