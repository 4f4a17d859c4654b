#!/usr/bin/env bash
# Benchmark: what each kind of `burnrate config import` edit costs at 10M cost facts, with the
# release binary. Loads `burnrate demo --scale 91` into its own database (burnrate_bench,
# dropped and made again), then imports the exported file with one change at a time and
# prints each import's wall time, peak RSS and the allocation line it printed.
#
# Usage: scripts/bench-edits.sh [SCALE]    (default 91: about 10M fact rows)
# Needs: target/release/burnrate, psql on 127.0.0.1:5432 (user postgres), target/pyenv
# (PyYAML, installed with moto by scripts/setup.sh --tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scale="${1:-91}"
bin="$PWD/target/release/burnrate"
py="$PWD/target/pyenv/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/burnrate_bench
export RUST_LOG=error
measure() { /usr/bin/time -f '  wall %e s, peak RSS %M KB' "$@"; }

psql -q -h 127.0.0.1 -U postgres -c 'drop database if exists burnrate_bench' postgres
psql -q -h 127.0.0.1 -U postgres -c 'create database burnrate_bench' postgres
"$bin" migrate >/dev/null
echo "== demo --scale $scale"
measure "$bin" demo --scale "$scale" >/dev/null
psql -q -h 127.0.0.1 -U postgres -c 'vacuum analyze' burnrate_bench
psql -At -h 127.0.0.1 -U postgres -c "select 'facts: ' || (select count(*) from costs_by_user) + (select count(*) from costs_by_usage_type)
  + (select count(*) from costs_by_service) + (select count(*) from costs_by_record_type)" burnrate_bench
"$bin" config export >"$work/base.yaml"

# edit NAME PYTHON: applies PYTHON to the current file (`doc`, parsed YAML) and imports it.
edit() {
  local name="$1" code="$2"
  "$bin" config export >"$work/current.yaml"
  "$py" - "$work/current.yaml" "$work/edited.yaml" <<EOF
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
teams = doc["teams"]
$code
yaml.safe_dump(doc, open(sys.argv[2], "w"), allow_unicode=True, sort_keys=False)
EOF
  echo "== $name"
  measure "$bin" config import "$work/edited.yaml" | grep -v '^would ' | tail -n 3
}

edit "import the exported file unchanged" 'pass'
edit "create an empty team" 'teams.append({"name": "bench-empty"})'
edit "delete the empty team" 'doc["teams"] = [t for t in teams if t["name"] != "bench-empty"]'
edit "add an owner to a team" 'teams[0].setdefault("owners", []).append("bench-owner@example.com")'
edit "remove that owner" 'teams[0]["owners"] = [o for o in teams[0]["owners"] if o != "bench-owner@example.com"]'
edit "add a budget" 'doc.setdefault("budgets", []).append({"name": "bench budget", "scope": {"org": True}, "period": "monthly", "amount": "1000000"})'
edit "delete that budget" 'doc["budgets"] = [b for b in doc["budgets"] if b["name"] != "bench budget"]'
edit "move the first team's first project to the second team" '
moved = teams[0]["projects"].pop(0)
teams[1].setdefault("projects", []).append(moved)
open(sys.argv[1] + ".moved", "w").write(json.dumps(moved))'
edit "move it back" '
moved = json.loads(open(sys.argv[1] + ".moved").read())
for t in teams:
    if moved in t.get("projects", []):
        t["projects"].remove(moved)
teams[0].setdefault("projects", []).insert(0, moved)'
