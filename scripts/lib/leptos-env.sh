# shellcheck shell=bash
# The variables cargo-leptos sets for both builds, from Cargo.toml's [package.metadata.leptos]:
# set the same, so a build by scripts/build-release.sh and one by `cargo leptos` compile
# alike (and reuse each other's target directory).
export LEPTOS_OUTPUT_NAME=burnrate
export LEPTOS_SITE_ROOT=target/site
export LEPTOS_SITE_PKG_DIR=pkg
export LEPTOS_SITE_ADDR=127.0.0.1:3000
export LEPTOS_RELOAD_PORT=3001
export LEPTOS_LIB_DIR=.
export LEPTOS_BIN_DIR=.
export LEPTOS_JS_MINIFY=true
export LEPTOS_HASH_FILES=false
# The site tools: npm binaryen (Debian's older wasm-opt breaks hydration), esbuild and
# lightningcss (scripts/setup.sh installs them in tools/site).
export PATH="$PWD/tools/site/node_modules/.bin:$PATH"

# The server's release build, as run.sh starts it early and build-release.sh runs it: one
# command, so the two never build differently (and the second finds the first's work done).
SERVER_BUILD=(cargo build --release --package=burnrate --bin=burnrate --no-default-features --features=ssr)
