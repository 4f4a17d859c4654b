#!/usr/bin/env bash
# `serve --demo` with no AWS settings logs nothing at WARN or ERROR while it loads the demo
# and in its first 10 seconds of serving (the first five minutes of a newcomer). Uses BURNRATE_BIN (default: the release binary) and
# a database of its own on the server DATABASE_URL names; every AWS variable is removed and
# HOME is empty.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BURNRATE_BIN:-$PWD/target/release/burnrate}"
# shellcheck source=scripts/lib/demo-server.sh
source scripts/lib/demo-server.sh
demo_server_prepare burnrate_quiet_start
serve_env=()
"${clean_env[@]}" "$bin" migrate >/dev/null
# Its first ten seconds of serving, however long the demo took to load before them (an
# unoptimised build loads it slower); at most a minute's wait for it to start serving.
demo_server_start 60
sleep 10
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""
if grep -E 'WARN|ERROR' "$work/log"; then
  echo "serve --demo without AWS settings logged the lines above at WARN or ERROR" >&2
  exit 1
fi
grep -q 'burnrate is serving' "$work/log" || { cat "$work/log" >&2; echo "serve --demo did not start within 10 s" >&2; exit 1; }
echo "serve --demo without AWS settings: no WARN or ERROR in its first 10 seconds"
