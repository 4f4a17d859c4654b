#!/usr/bin/env bash
# `serve --demo` with no AWS settings logs nothing at WARN or ERROR while it loads the demo
# and in its first 10 seconds of serving (the first five minutes of a newcomer). Uses BURNRATE_BIN (default: the release binary) and
# a database of its own on the server DATABASE_URL names; every AWS variable is removed and
# HOME is empty.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BURNRATE_BIN:-$PWD/target/release/burnrate}"
work="$(mktemp -d)"
name="burnrate_quiet_start_$(date +%s)"
database="${DATABASE_URL%/*}/$name"
cleanup() {
  kill "${pid:-}" 2>/dev/null || true
  rm -rf "$work"
  # Best effort: the database is small, and psql may be missing where PostgreSQL is private.
  if command -v psql >/dev/null; then psql -q "$DATABASE_URL" -c "drop database if exists $name" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
clean_env=(env -i PATH="$PATH" HOME="$work" DATABASE_URL="$database" RUST_LOG=info
  LEPTOS_SITE_ROOT="$PWD/target/site" AWS_EC2_METADATA_DISABLED=true)
"${clean_env[@]}" "$bin" migrate >/dev/null
"${clean_env[@]}" "$bin" serve --demo --addr 127.0.0.1:0 >"$work/stdout" 2>"$work/log" &
pid=$!
# Its first ten seconds of serving, however long the demo took to load before them (an
# unoptimised build loads it slower); at most a minute's wait for it to start serving.
for _ in $(seq 1 120); do
  grep -q "burnrate is serving" "$work/log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.5
done
if ! grep -q "burnrate is serving" "$work/log"; then
  cat "$work/log" >&2
  echo "serve --demo did not start serving within a minute" >&2
  exit 1
fi
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
