#!/usr/bin/env bash
# Benchmark: reading 30 days of GPU utilisation at five-minute steps for a fleet, from a real
# Prometheus and from CloudWatch (moto behind the RPC v2 CBOR front), with the release
# binary's `burnrate bench utilisation`. Prints wall time and peak RSS per read.
#
# Usage: scripts/bench-utilisation.sh [GPUS] [DAYS]    (default 500 GPUs, 30 days)
# Needs: target/release/burnrate, promtool and prometheus, target/pyenv (scripts/setup.sh --tests).
set -euo pipefail
cd "$(dirname "$0")/.."
gpus="${1:-500}"
days="${2:-30}"
bin="$PWD/target/release/burnrate"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
measure() { /usr/bin/time -f '  wall %e s, peak RSS %M KB' "$@"; }

echo "== Prometheus: $gpus GPUs × $days days, a sample every 5 minutes"
start=$(date +%s)
python3 tests/fixtures/dcgm_workloads.py --end "$(( $(date +%s) - 5 ))" --fleet "$gpus" --hours "$(( days * 24 ))" \
  --every 300 >"$work/fleet.om"
echo "  generated $(wc -l <"$work/fleet.om") lines in $(( $(date +%s) - start )) s"
start=$(date +%s)
# Large blocks: at the default 2 h promtool takes over ten minutes for a month of 500 GPUs.
promtool tsdb create-blocks-from openmetrics --max-block-duration=720h "$work/fleet.om" "$work/data" >/dev/null
echo "  promtool loaded them in $(( $(date +%s) - start )) s"
rm "$work/fleet.om"
printf 'global:\n  scrape_interval: 1m\n' >"$work/prometheus.yml"
port=$(free_port)
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$port" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break; sleep 0.5; done
for run in 1 2 3; do
  echo " run $run"
  BURNRATE_PROMETHEUS_URL="http://127.0.0.1:$port" BURNRATE_AWS_TIMEOUT=600s measure "$bin" bench utilisation --days "$days"
done

echo "== CloudWatch: $gpus agent GPUs × $days days (synthetic points behind the front; see cloudwatch_rpcv2.py)"
moto_port=$(free_port)
target/pyenv/bin/moto_server -H 127.0.0.1 -p "$moto_port" >/dev/null 2>&1 &
pids+=($!)
front_port=$(free_port)
target/pyenv/bin/python tests/fixtures/cloudwatch_rpcv2.py --port "$front_port" --moto "http://127.0.0.1:$moto_port" \
  --synthetic-agent-gpus "$gpus" >"$work/front.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do grep -q ready "$work/front.log" 2>/dev/null && curl -s "http://127.0.0.1:$moto_port/moto-api/" >/dev/null && break; sleep 0.5; done
for run in 1 2 3; do
  echo " run $run"
  AWS_ENDPOINT_URL="http://127.0.0.1:$front_port" AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench \
    AWS_EC2_METADATA_DISABLED=true BURNRATE_CLOUDWATCH=on BURNRATE_AWS_REGIONS=us-east-1 BURNRATE_AWS_TIMEOUT=600s \
    measure "$bin" bench utilisation --days "$days"
done
