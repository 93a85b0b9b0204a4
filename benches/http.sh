#!/usr/bin/env bash
# HTTP throughput: GET /credits with the agent key on the local server
# (embedded store, request logs on), against a bare axum server answering a
# static JSON body of the same shape (benches/bare), in the same run, with
# wrk (apt-get install wrk). Prints requests/s and p99 of each and the ratio.
# On 2 cores wrk shares the CPU with the server: compare the ratio, never the
# absolute figures across runs.
#
#   benches/http.sh                # DURATION=10 CONNECTIONS=32 PROFILE=bench NO_BUILD=1
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
PROFILE=${PROFILE:-bench}
KEY=svc_http_bench_agent_key_0000000000000000000000
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }

[ -n "${NO_BUILD:-}" ] || cargo build -q --profile "$PROFILE" -p mailhost --bin mailhost -p bare --bin bare-axum
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
# Cargo's built-in profiles write to debug/ (dev, test) and release/ (release, bench).
case $PROFILE in
  dev | test) bin=$target_dir/debug ;;
  release | bench) bin=$target_dir/release ;;
  *) bin=$target_dir/$PROFILE ;;
esac

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),1)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  return 1
}
SCRATCH=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# Runs wrk on a URL (extra arguments go to wrk) and prints "<req/s> <p99 ms>".
measure() {
  local url=$1
  shift
  wrk -t1 -c"$CONNECTIONS" -d2s "$@" "$url" >/dev/null # warm up
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url" >"$SCRATCH/wrk.out"
  python3 - "$SCRATCH/wrk.out" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
value, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
if errors:
    sys.exit(f"{errors.group(1)} non-2xx answers:\n{text}")
print(f"{rps:.0f} {p99:.2f}")
EOF
}

port=$(free_port)
"$bin/bare-axum" "127.0.0.1:$port" &
PIDS+=($!)
wait_port "$port"
read -r bare_rps bare_p99 < <(measure "http://127.0.0.1:$port/credits")
kill "${PIDS[0]}"

port=$(free_port)
RUST_LOG=info "$bin/mailhost" serve --addr "127.0.0.1:$port" --data-dir "$SCRATCH/data" --agent-key "$KEY" \
  >"$SCRATCH/server.log" 2>&1 &
PIDS+=($!)
wait_port "$port"
read -r rps p99 < <(measure "http://127.0.0.1:$port/credits" -H "Authorization: Bearer $KEY")
lines=$(grep -c '"request"\|request' "$SCRATCH/server.log" || true)

# The inbox list: 25 stored messages in the service inbox, a page of 25.
for i in $(seq 1 25); do
  printf 'Delivered-To: inbox@mailhost.localhost\r\nFrom: a@example.org\r\nTo: inbox@mailhost.localhost\r\nSubject: Bench %s\r\nMessage-ID: <bench-%s@example.org>\r\n\r\nA short message.\r\n' "$i" "$i" >"$SCRATCH/m.eml"
  "$bin/mailhost" deliver --data-dir "$SCRATCH/data" "$SCRATCH/m.eml" >/dev/null
done
for _ in $(seq 1 50); do
  listed=$(curl -s "http://127.0.0.1:$port/inbox?limit=25" -H "Authorization: Bearer $KEY" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["messages"]))')
  [ "$listed" = 25 ] && break
  sleep 0.2
done
read -r inbox_rps inbox_p99 < <(measure "http://127.0.0.1:$port/inbox?limit=25" -H "Authorization: Bearer $KEY")

echo "GET /credits, wrk -t1 -c$CONNECTIONS -d${DURATION}s, $PROFILE profile, $(nproc) cores"
printf '%-34s %8s req/s  p99 %6s ms\n' "bare axum, static JSON" "$bare_rps" "$bare_p99"
printf '%-34s %8s req/s  p99 %6s ms\n' "mailhost serve, agent key" "$rps" "$p99"
python3 -c "print(f'ratio: {$rps / $bare_rps:.2f}x the bare server')"
printf '%-34s %8s req/s  p99 %6s ms\n' "mailhost GET /inbox, 25 rows" "$inbox_rps" "$inbox_p99"
python3 -c "print(f'ratio: {$inbox_rps / $bare_rps:.2f}x the bare server')"
echo "request log lines written by the server: $lines"
