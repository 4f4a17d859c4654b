#!/usr/bin/env bash
# Benchmark: every page's first view after a data change, one render, /metrics, the API's
# heaviest reads and the savings computation, at 10M cost facts, with the release binary
# (#54). Run scripts/bench-edits.sh first: it loads `burnrate demo --scale 91` into
# burnrate_bench (and times the config imports); this script uses that database as it is.
#
# Usage: scripts/bench-pages.sh [extra pages.mjs flags, e.g. --modes one,cold,herd]
# Needs: target/release/burnrate, end2end's npm packages (scripts/setup.sh --tests), psql.
# Only 127.0.0.1 is contacted; the server is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$PWD/target/release/burnrate"
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/burnrate_bench
export RUST_LOG=error
port=3900
password='a long bench password 1'
metrics_token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"

psql -q -h 127.0.0.1 -U postgres -c 'vacuum analyze' burnrate_bench
# The bench admin, made once per database (a later run finds it with the same password).
echo "$password" | "$bin" admin create --email bench@example.com >/dev/null 2>&1 || true
api_token="$("$bin" token create --email bench@example.com --name "bench $(date +%s)")"

echo "== the savings computation (burnrate insights: the same computation serve runs in the background)"
/usr/bin/time -f '  wall %e s, peak RSS %M KB' "$bin" insights >/dev/null

BURNRATE_INGEST_INTERVAL=off BURNRATE_METRICS_TOKEN="$metrics_token" BURNRATE_API_RATE_LIMIT=100000 \
  "$bin" serve --addr "127.0.0.1:$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null

cd end2end
node bench/pages.mjs --url "http://127.0.0.1:$port" --pid "$server" \
  --database "$DATABASE_URL" --email bench@example.com --password "$password" \
  --metrics-token "$metrics_token" --api-token "$api_token" \
  --pages overview,teams,team,project,accounts,savings,metrics,api "$@"
