#!/usr/bin/env bash
# HTTP throughput: GET /credits and the inbox list (a page of 25) with the
# agent key on the local server (embedded store, request logs on), against a
# bare axum server answering the same bodies as static JSON (benches/bare), in
# the same run, with wrk (apt-get install wrk). Prints requests/s and p99 of
# each and the ratios.
# On 2 cores wrk shares the CPU with the server: compare the ratio, never the
# absolute figures across runs.
#
#   benches/http.sh   # DURATION=5 ROUNDS=5 CONNECTIONS=32 PROFILE=bench NO_BUILD=1 LOG=info
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-32}
PROFILE=${PROFILE:-bench}
KEY=svc_http_bench_agent_key_0000000000000000000000
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }

# shellcheck source=benches/lib.sh
source benches/lib.sh
bench_binaries

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

# CPU time a process has used (user + system, all threads), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Runs wrk on a URL served by process $1 (extra arguments go to wrk) and
# prints "<req/s> <p99 ms> <server CPU µs per request>".
measure() {
  local pid=$1 url=$2
  shift 2
  local before
  before=$(cpu_ticks "$pid")
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$@" "$url" >"$SCRATCH/wrk.out"
  python3 - "$SCRATCH/wrk.out" "$(($(cpu_ticks "$pid") - before))" "$(getconf CLK_TCK)" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
ticks, hz = int(sys.argv[2]), int(sys.argv[3])
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
value, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
if errors:
    sys.exit(f"{errors.group(1)} non-2xx answers:\n{text}")
requests = int(re.search(r"(\d+) requests in", text).group(1))
print(f"{rps:.0f} {p99:.2f} {ticks / hz * 1e6 / requests:.1f}")
EOF
}

# The service: the agent key, 25 messages in the service inbox. A second
# server on a copy of the same mail keeps no memo of encoded rows
# (MAILHOST_LIST_MEMO_BYTES=0): each of its reads costs what a page read for
# the first time (or after its rows changed) costs.
deliver_bench_messages "$SCRATCH/data" "$SCRATCH"
cp -r "$SCRATCH/data" "$SCRATCH/data-first"
# Starts a server on data directory $1 (extra variables before it) and
# prints its pid and URL once it lists the 25 messages.
start_service() {
  local dir=$1 port listed=0
  shift
  port=$(free_port)
  env RUST_LOG="${LOG:-info}" "$@" "$bin/mailhost" serve --addr "127.0.0.1:$port" --data-dir "$dir" \
    --agent-key "$KEY" >>"$SCRATCH/server.log" 2>&1 &
  local pid=$!
  wait_port "$port" >&2
  for _ in $(seq 1 50); do
    curl -s "127.0.0.1:$port/inbox?limit=25" -H "Authorization: Bearer $KEY" >"$SCRATCH/inbox.json"
    listed=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["messages"]))' "$SCRATCH/inbox.json")
    [ "$listed" = 25 ] && break
    sleep 0.2
  done
  [ "$listed" = 25 ] || { echo "the inbox never listed 25 messages" >&2; exit 1; }
  echo "$pid http://127.0.0.1:$port"
}
read -r service_pid service < <(start_service "$SCRATCH/data")
[ -n "${service:-}" ] || exit 1
PIDS+=("$service_pid")
read -r first_pid first < <(start_service "$SCRATCH/data-first" MAILHOST_LIST_MEMO_BYTES=0)
[ -n "${first:-}" ] || exit 1
PIDS+=("$first_pid")

# The baseline: the same bodies, static.
port=$(free_port)
"$bin/bare-axum" "127.0.0.1:$port" "$SCRATCH/inbox.json" &
PIDS+=($!)
bare_pid=$!
wait_port "$port"
bare=http://127.0.0.1:$port

# Rounds that take turns (bare, service; credits, then the inbox), so a change
# in the machine's load (other builds, a hypervisor's steal) falls on both
# sides of each ratio; the medians of the rounds are printed.
auth=(-H "Authorization: Bearer $KEY")
wrk -t1 -c"$CONNECTIONS" -d2s "$bare/credits" >/dev/null
wrk -t1 -c"$CONNECTIONS" -d2s "${auth[@]}" "$service/credits" >/dev/null
wrk -t1 -c"$CONNECTIONS" -d2s "${auth[@]}" "$first/inbox?limit=25" >/dev/null
: >"$SCRATCH/rounds"
for _ in $(seq 1 "$ROUNDS"); do
  read -r b_rps b_p99 b_cpu < <(measure "$bare_pid" "$bare/credits")
  read -r c_rps c_p99 c_cpu < <(measure "$service_pid" "$service/credits" "${auth[@]}")
  read -r bi_rps bi_p99 bi_cpu < <(measure "$bare_pid" "$bare/inbox")
  read -r i_rps i_p99 i_cpu < <(measure "$service_pid" "$service/inbox?limit=25" "${auth[@]}")
  read -r f_rps f_p99 f_cpu < <(measure "$first_pid" "$first/inbox?limit=25" "${auth[@]}")
  echo "$b_rps $b_p99 $c_rps $c_p99 $bi_rps $bi_p99 $i_rps $i_p99 $b_cpu $c_cpu $bi_cpu $i_cpu $f_rps $f_p99 $f_cpu" >>"$SCRATCH/rounds"
done
lines=$(grep -c 'request' "$SCRATCH/server.log" || true)

echo "wrk -t1 -c$CONNECTIONS, $ROUNDS rounds of ${DURATION}s, $PROFILE profile, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$SCRATCH/rounds" <<'EOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
ratio = lambda a, b: statistics.median(r[a] / r[b] for r in rows)
print(f"{'':34} {'req/s':>8} {'p99 ms':>8} {'CPU µs/req':>11}   (medians of the rounds)")
print(f"{'bare axum, GET /credits (static)':34} {med(0):8.0f} {med(1):8.2f} {med(8):11.1f}")
print(f"{'mailhost GET /credits, agent key':34} {med(2):8.0f} {med(3):8.2f} {med(9):11.1f}   ratio {ratio(2, 0):.2f}x")
print(f"{'bare axum, GET /inbox (static)':34} {med(4):8.0f} {med(5):8.2f} {med(10):11.1f}")
print(f"{'mailhost GET /inbox, 25 rows again':34} {med(6):8.0f} {med(7):8.2f} {med(11):11.1f}   ratio {ratio(6, 4):.2f}x")
print(f"{'mailhost GET /inbox, first read':34} {med(12):8.0f} {med(13):8.2f} {med(14):11.1f}   ratio {ratio(12, 4):.2f}x")
print("per round, credits/inbox again/first read ratio:",
      ", ".join(f"{r[2]/r[0]:.2f}/{r[6]/r[4]:.2f}/{r[12]/r[4]:.2f}" for r in rows))
EOF
echo "request log lines written by the server: $lines"
