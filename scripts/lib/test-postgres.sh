# Sourced by scripts/test.sh: makes sure DATABASE_URL names a PostgreSQL server the tests
# may create databases on. Uses an existing one if set or listening on 127.0.0.1:5432;
# otherwise starts a throwaway cluster under target/test-postgres on 127.0.0.1:55432.

test_postgres_start() {
  if [ -n "${DATABASE_URL:-}" ]; then return; fi
  if command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432 -U postgres; then
    export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
    return
  fi
  local bin dir owner
  bin="$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")"
  dir="$PWD/target/test-postgres"
  owner=()
  if [ "$(id -u)" = 0 ]; then owner=(runuser -u postgres --); fi
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  if [ ! -f "$dir/PG_VERSION" ]; then
    "${owner[@]}" "$bin/initdb" -D "$dir" -U postgres --auth=trust --no-locale -E UTF8 >/dev/null
  fi
  if ! "${owner[@]}" "$bin/pg_ctl" status -D "$dir" >/dev/null 2>&1; then
    "${owner[@]}" "$bin/pg_ctl" start -D "$dir" -w -l "$dir/server.log" \
      -o "-c listen_addresses=127.0.0.1 -p 55432 -k $dir -c max_connections=200" >/dev/null
    TEST_POSTGRES_STOP=("${owner[@]}" "$bin/pg_ctl" stop -D "$dir" -m fast)
  fi
  export DATABASE_URL="postgres://postgres@127.0.0.1:55432/postgres"
}

test_postgres_stop() {
  if [ -n "${TEST_POSTGRES_STOP+x}" ]; then "${TEST_POSTGRES_STOP[@]}" >/dev/null || true; fi
}
