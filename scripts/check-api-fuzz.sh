#!/usr/bin/env bash
# Fuzzes every /api/v1 operation with schemathesis (PyPI) against a live `serve --demo` and an
# admin's API token: each operation gets a bounded number of generated requests, valid and
# not, and fails the run on any 5xx, any response its OpenAPI document does not describe
# (status, content type, body schema). Uses BURNRATE_BIN and a database of its own on the
# server DATABASE_URL names. The document is fetched with the token and given to schemathesis
# as a file, so the run tests exactly what the server publishes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BURNRATE_BIN:-$PWD/target/debug/burnrate}"
st="$PWD/target/schemathesis/bin/schemathesis"
# Generated requests per operation and phase: enough to reach every field's edge, bounded so
# the run takes a few minutes on two cores.
examples="${API_FUZZ_EXAMPLES:-25}"
# shellcheck source=scripts/lib/demo-server.sh
source scripts/lib/demo-server.sh
demo_server_prepare burnrate_api_fuzz
# The fuzzer sends hundreds of requests a minute with one token; the limit itself has its own
# tests. Plain log lines, so the ERROR check below reads them.
serve_env=(BURNRATE_API_RATE_LIMIT=100000 NO_COLOR=1)
"${clean_env[@]}" "$bin" migrate >/dev/null
echo "fuzz-admin-password-1" | "${clean_env[@]}" "$bin" admin create --email fuzz@example.com --name Fuzz --role admin >/dev/null
token="$("${clean_env[@]}" "$bin" token create --email fuzz@example.com --name fuzz --expires-days 1)"
demo_server_start 120
curl -fsS --max-time 30 -H "Authorization: Bearer $token" "$base/api/v1/openapi.json" >"$work/openapi.json"
status=0
# From the work folder: schemathesis keeps its cache in the current directory.
cd "$work"
"$st" --no-color run "$work/openapi.json" \
  --url "$base" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples "$examples" \
  --request-timeout 30 \
  --phases examples,coverage,fuzzing \
  --seed 1 || status=$?
if grep -E 'ERROR' "$work/log" >&2; then
  echo "the server logged the errors above while fuzzed" >&2
  status=1
fi
exit "$status"
