# Sourced by scripts/check-quiet-start.sh and scripts/check-api-fuzz.sh: `serve --demo` on a
# free loopback port, against a database of its own on the server DATABASE_URL names, with
# every AWS variable removed and an empty HOME, all of it removed on exit.
#
# demo_server_prepare NAME   sets `work` (a scratch folder), `database` and `clean_env` (the
#                            environment to run burnrate in; add variables after it), and
#                            arms the cleanup.
# demo_server_start SECONDS  starts "${clean_env[@]}" "$bin" serve --demo (plus any variables
#                            in `serve_env`), waits at most SECONDS to see it serving, sets
#                            `pid` and `base` (http://127.0.0.1:PORT); exits 1 if it never did.

demo_server_prepare() {
  work="$(mktemp -d)"
  demo_database_name="${1}_$(date +%s)"
  database="${DATABASE_URL%/*}/$demo_database_name"
  trap demo_server_cleanup EXIT
  clean_env=(env -i PATH="$PATH" HOME="$work" DATABASE_URL="$database" RUST_LOG=info
    LEPTOS_SITE_ROOT="$PWD/target/site" AWS_EC2_METADATA_DISABLED=true)
}

demo_server_cleanup() {
  kill "${pid:-}" 2>/dev/null || true
  rm -rf "$work"
  # Best effort: the database is small, and psql may be missing where PostgreSQL is private.
  if command -v psql >/dev/null; then
    psql -q "$DATABASE_URL" -c "drop database if exists $demo_database_name" >/dev/null 2>&1 || true
  fi
}

demo_server_start() {
  "${clean_env[@]}" "${serve_env[@]}" "$bin" serve --demo --addr 127.0.0.1:0 >"$work/stdout" 2>"$work/log" &
  pid=$!
  local _
  for _ in $(seq 1 $(( $1 * 2 ))); do
    grep -q "burnrate is serving" "$work/log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  base="$(grep -o 'burnrate is serving on http://[0-9.:]*' "$work/log" | head -1 | sed 's/.* on //')"
  if [ -z "$base" ]; then
    cat "$work/log" >&2
    echo "serve --demo did not start serving within $1 seconds" >&2
    exit 1
  fi
}
