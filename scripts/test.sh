#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints for both builds, unit and
# integration tests on a real PostgreSQL, the release site the Dockerfile makes, and
# browser tests in Chromium against the debug server the tests built. Installs missing
# tools first (scripts/setup.sh).
#
# The server's release build is left to run.sh and the Dockerfile: it compiles the same code
# with the same features as the debug build here (no sqlx macro reads SQLX_OFFLINE), and on
# a fresh machine it took 22 minutes of a CI run that reached 4,551 of its 5,400 seconds
# (docs/PERFORMANCE.md, "The test suite on a fresh machine").
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

step "docs: every relative link and anchor in README.md, CONTRIBUTING.md and docs/ resolves"
python3 scripts/check-doc-links.py

step "cargo deny: licences, bans and sources (deny.toml; advisories need GitHub, unreachable here)"
cargo deny check licenses bans sources

step "clippy (ssr)"
cargo clippy --features ssr --all-targets -- -D warnings

step "clippy (hydrate, wasm32)"
cargo clippy --features hydrate --lib --target wasm32-unknown-unknown -- -D warnings

step "unit and integration tests (PostgreSQL), recording every AWS exchange"
export BURNRATE_AWS_RECORDING="$PWD/target/aws-recording"
rm -rf "$BURNRATE_AWS_RECORDING"
cargo test --features ssr

step "the release site, as in the Dockerfile (wasm chunks, precompressed)"
scripts/build-release.sh --site-only

server="$PWD/target/debug/burnrate"
step "serve --demo without AWS settings: no WARN or ERROR in its first 10 seconds"
BURNRATE_BIN="$server" scripts/check-quiet-start.sh

step "every /api/v1 operation fuzzed by schemathesis against serve --demo"
BURNRATE_BIN="$server" scripts/check-api-fuzz.sh

step "browser tests (Chromium)"
(cd end2end && BURNRATE_BIN="$server" LEPTOS_SITE_ROOT="$PWD/../target/site" node --test --test-concurrency=1 tests/)

step "AWS contract: every exchange the tests and browser tests recorded, against botocore's models and AWS's documentation"
target/botocore/bin/python scripts/aws-contract/check.py --self-test
target/botocore/bin/python scripts/aws-contract/check.py --complete "$BURNRATE_AWS_RECORDING"
