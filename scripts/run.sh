#!/usr/bin/env bash
# Builds burnrate (release) and serves the dashboard with demo data on http://127.0.0.1:3000.
# Installs missing tools first; extra arguments go to `burnrate serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The server's build is the longest part of a first run and needs none of the site's tools:
# it starts now, beside their install. build-release.sh then waits for it (cargo's lock on
# target/) and finds it done. Should it fail here (no C compiler before setup installs one),
# build-release.sh builds it again and shows why.
# shellcheck source=scripts/lib/shared-target.sh
source scripts/lib/shared-target.sh
shared_target_link "$PWD"
mkdir -p target
# shellcheck source=scripts/lib/leptos-env.sh
source scripts/lib/leptos-env.sh
# Its own process group (setsid), so a failed setup or Ctrl-C stops the whole build, rustc
# included, instead of leaving it to write into target/ unseen.
setsid "${SERVER_BUILD[@]}" >target/.server-build-early.log 2>&1 &
early_build=$!
trap 'kill -- -"$early_build" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
scripts/setup.sh
scripts/build-release.sh
# build-release.sh waited for the early build: it is done, and the binary is current.
trap - EXIT INT TERM

# As root, PostgreSQL runs as the `postgres` user, which cannot enter a checkout under a
# private home such as /root: keep its data somewhere it can reach.
if [ "$(id -u)" = 0 ] && [ -z "${DATABASE_URL:-}" ] && [ -z "${BURNRATE_DATA_DIR:-}" ] \
   && id postgres >/dev/null 2>&1 && ! runuser -u postgres -- test -x "$PWD"; then
  export BURNRATE_DATA_DIR=/var/lib/burnrate
  echo "run.sh: $PWD is closed to the postgres user; keeping the database in $BURNRATE_DATA_DIR" >&2
fi
exec target/release/burnrate serve --demo "$@"
