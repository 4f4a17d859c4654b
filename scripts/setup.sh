#!/usr/bin/env bash
# Installs every tool burnrate's build and tests need, skipping what is already present,
# so a second run finishes in seconds. Safe to run as root or as a sudo-capable user.
set -euo pipefail

WASM_BINDGEN_VERSION=0.2.130   # must equal the `wasm-bindgen = "=…"` pin in Cargo.toml
SPLIT_TOOL_VERSION=0.1.0       # tools/wasm-split/Cargo.toml's version
CARGO_DENY_VERSION=0.20.2      # licences, bans and sources in CI (deny.toml)

here="$(cd "$(dirname "$0")/.." && pwd)"
need_apt=()
with_tests=0
[ "${1:-}" = "--tests" ] && with_tests=1
# shellcheck source=scripts/lib/shared-target.sh
source "$here/scripts/lib/shared-target.sh"
shared_target_link "$here"

log() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# PostgreSQL binaries (the zero-config private cluster needs initdb/pg_ctl/postgres).
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need_apt+=(postgresql)
fi
command -v npm >/dev/null || need_apt+=(nodejs npm)
command -v cc >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
if [ "$with_tests" = 1 ]; then
  command -v chromium >/dev/null || need_apt+=(chromium)
  command -v python3 >/dev/null || need_apt+=(python3 python3-venv)
  # The utilisation tests start a real Prometheus and load DCGM series with promtool.
  command -v promtool >/dev/null || need_apt+=(prometheus)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! rustup target list --installed | grep -q wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
# The site's two Rust tools install side by side: wasm-bindgen-cli, and burnrate-wasm-split
# (tools/wasm-split: the splitter cargo-leptos links, without the rest of cargo-leptos,
# whose install took most of a fresh machine's first 30 minutes; docs/PERFORMANCE.md).
# Their release profiles gain nothing from full optimisation, LTO and one codegen unit, which
# cost minutes on 2 cores: each runs for seconds per build.
export CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_OPT_LEVEL=1
bindgen_pid=""
bindgen_log="$(mktemp)"
# If the foreground install fails (set -e), the background one stops too, and its log goes.
stop_background_install() {
  if [ -n "$bindgen_pid" ]; then kill "$bindgen_pid" 2>/dev/null || true; fi
  rm -f "$bindgen_log"
}
trap stop_background_install EXIT
if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (in the background)"
  # not --locked: one locked dependency is missing from the registry mirror
  cargo install wasm-bindgen-cli --version "=$WASM_BINDGEN_VERSION" >"$bindgen_log" 2>&1 &
  bindgen_pid=$!
fi
# Reinstalled whenever its sources or lock file change, not only its version.
split_sources="$(cd "$here/tools/wasm-split" && find Cargo.toml Cargo.lock src -type f -print0 | sort -z \
  | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
split_stamp="${CARGO_HOME:-$HOME/.cargo}/.burnrate-wasm-split.sha256"
if ! burnrate-wasm-split --version 2>/dev/null | grep -q "$SPLIT_TOOL_VERSION" \
   || [ "$(cat "$split_stamp" 2>/dev/null)" != "$split_sources" ]; then
  log "installing burnrate-wasm-split $SPLIT_TOOL_VERSION (tools/wasm-split)"
  cargo install --force --path "$here/tools/wasm-split" --locked --target-dir "$here/target/tools"
  echo "$split_sources" > "$split_stamp"
fi
if [ -n "$bindgen_pid" ]; then
  if ! wait "$bindgen_pid"; then
    cat "$bindgen_log" >&2
    log "installing wasm-bindgen-cli failed (its output is above)"
    exit 1
  fi
  bindgen_pid=""
  log "wasm-bindgen-cli $WASM_BINDGEN_VERSION installed"
fi
unset CARGO_PROFILE_RELEASE_LTO CARGO_PROFILE_RELEASE_CODEGEN_UNITS CARGO_PROFILE_RELEASE_OPT_LEVEL

# npm packages: the site tools (binaryen's wasm-opt, esbuild, lightningcss), prebuilt; and,
# for the tests, playwright-core and pg.
# Each installed again when its lock file changes.
npm_current() { cmp -s "$1/package-lock.json" "$1/node_modules/.burnrate-package-lock.json"; }
npm_install() {
  (cd "$1" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.burnrate-package-lock.json)
}
if ! npm_current "$here/tools/site"; then
  log "installing the site's npm tools (binaryen, esbuild, lightningcss)"
  npm_install "$here/tools/site"
fi
if [ "$with_tests" = 1 ] && ! npm_current "$here/end2end"; then
  log "installing end2end npm packages (playwright-core, pg)"
  npm_install "$here/end2end"
fi

if [ "$with_tests" = 1 ]; then
  # The real path: a venv's scripts name their interpreter by absolute path, and the link
  # target/ may belong to a checkout that is gone by the next run.
  mkdir -p "$here/target"
  real_target="$(cd "$here/target" && pwd -P)"
  venv="$real_target/pyenv"
  if [ ! -x "$venv/bin/moto_server" ] || [ ! -x "$venv/bin/aiosmtpd" ]; then
    log "installing test servers (moto[server], aiosmtpd) into target/pyenv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'moto[server]==5.2.5' 'aiosmtpd==1.4.6'
  fi
  # AWS's own service models, pinned, for the contract step (scripts/aws-contract/check.py):
  # a venv of its own, so moto's botocore can move without moving the judge.
  contract_venv="$real_target/botocore"
  # `regex` reads the models' Unicode classes (\p{L}) that Python's `re` cannot.
  if ! "$contract_venv/bin/python" -c 'import botocore, regex; assert botocore.__version__ == "1.44.8"; assert regex.__version__ == "2.5.148"' 2>/dev/null; then
    log "installing botocore 1.44.8 (AWS's service models) and regex into target/botocore"
    python3 -m venv "$contract_venv"
    "$contract_venv/bin/pip" install -q 'botocore==1.44.8' 'regex==2024.11.6'
  fi
  # cargo-deny checks licences, bans and sources (deny.toml); 3 minutes to build, once a
  # machine (~/.cargo/bin).
  if ! cargo deny --version 2>/dev/null | grep -q "$CARGO_DENY_VERSION"; then
    log "installing cargo-deny $CARGO_DENY_VERSION"
    cargo install cargo-deny --version "=$CARGO_DENY_VERSION" --locked
  fi
  # The API fuzzer, in a venv of its own: its pins must not move moto's.
  fuzz_venv="$real_target/schemathesis"
  if ! "$fuzz_venv/bin/schemathesis" --version 2>/dev/null | grep -q '4.32.5'; then
    log "installing schemathesis into target/schemathesis"
    python3 -m venv "$fuzz_venv"
    "$fuzz_venv/bin/pip" install -q 'schemathesis==4.32.5'
  fi
fi
log "tools ready"
