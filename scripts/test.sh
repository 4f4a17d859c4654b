#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints for both builds, unit and
# integration tests on a real PostgreSQL, the release build the Dockerfile makes, and
# browser tests in Chromium. Installs missing tools first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

scripts/setup.sh --tests
# shellcheck source=scripts/lib/test-postgres.sh
source scripts/lib/test-postgres.sh
test_postgres_start
trap test_postgres_stop EXIT

step "cargo fmt --check"
cargo fmt --check

step "layering: no import cycle, imports go down the tiers, files at most 450 lines of code"
python3 scripts/check-layers.py --self-test
python3 scripts/check-layers.py

step "clippy (ssr)"
cargo clippy --features ssr --all-targets -- -D warnings

step "clippy (hydrate, wasm32)"
cargo clippy --features hydrate --lib --target wasm32-unknown-unknown -- -D warnings

step "unit and integration tests (PostgreSQL)"
cargo test --features ssr

step "release build, as in the Dockerfile (SQLX_OFFLINE=true)"
SQLX_OFFLINE=true scripts/build-release.sh

step "serve --demo without AWS settings: no WARN or ERROR in its first 10 seconds"
scripts/check-quiet-start.sh

step "browser tests (Chromium)"
(cd end2end && BURNRATE_BIN="$PWD/../target/release/burnrate" LEPTOS_SITE_ROOT="$PWD/../target/site" node --test --test-concurrency=1 tests/)
