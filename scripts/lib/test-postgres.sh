# Sourced by scripts/test.sh: makes sure DATABASE_URL names a PostgreSQL server the tests
# may create databases on. Uses DATABASE_URL if set, else a trust-auth server on
# 127.0.0.1:5432, else (or with BURNRATE_TEST_PRIVATE_PG=1) a throwaway cluster on
# 127.0.0.1:55432 under /tmp, where the postgres user can reach it even from a /root checkout.

test_postgres_start() {
  if [ -n "${DATABASE_URL:-}" ]; then return; fi
  if [ -z "${BURNRATE_TEST_PRIVATE_PG:-}" ] && command -v pg_isready >/dev/null \
     && pg_isready -q -h 127.0.0.1 -p 5432 -U postgres; then
    export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
    return
  fi
  local bin dir
  bin="$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")"
  dir="${TMPDIR:-/tmp}/burnrate-test-postgres-$(id -u)"
  local as_owner=()
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    as_owner=(runuser -u postgres --)
    chown postgres: "$dir"
  fi
  chmod 700 "$dir"
  if [ ! -f "$dir/PG_VERSION" ]; then
    "${as_owner[@]}" "$bin/initdb" -D "$dir" -U postgres --auth=trust --no-locale -E UTF8 >/dev/null
  fi
  if ! "${as_owner[@]}" "$bin/pg_ctl" status -D "$dir" >/dev/null 2>&1; then
    "${as_owner[@]}" "$bin/pg_ctl" start -D "$dir" -w -l "$dir/server.log" \
      -o "-c listen_addresses=127.0.0.1 -p 55432 -k $dir -c max_connections=200" >/dev/null
    TEST_POSTGRES_STOP=("${as_owner[@]}" "$bin/pg_ctl" stop -D "$dir" -m fast)
  fi
  export DATABASE_URL="postgres://postgres@127.0.0.1:55432/postgres"
}

test_postgres_stop() {
  if [ -n "${TEST_POSTGRES_STOP+x}" ]; then "${TEST_POSTGRES_STOP[@]}" >/dev/null || true; fi
}
