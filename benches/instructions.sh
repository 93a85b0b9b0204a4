#!/usr/bin/env bash
# Instructions per request, counted by valgrind's callgrind: GET /credits and
# the inbox list (a page of 25) with the agent key on the local server, and the
# bare axum server's static answer, in the same run. Unlike req/s, the count
# does not move with the machine's load, so it shows what a change saves.
# Under valgrind SHA-256 runs without the CPU's SHA extensions (about 10 000
# instructions of each authenticated request that a real run does not spend).
#
#   benches/instructions.sh   # PROFILE=bench NO_BUILD=1 KEEP=dir (keeps callgrind.out files)
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-bench}
KEY=svc_http_bench_agent_key_0000000000000000000000
for tool in valgrind callgrind_control wrk curl; do
  command -v $tool >/dev/null || { echo "$tool missing: apt-get install valgrind wrk" >&2; exit 1; }
done

# shellcheck source=benches/lib.sh
source benches/lib.sh
bench_binaries

SCRATCH=${KEEP:-$(mktemp -d)}
mkdir -p "$SCRATCH"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$SCRATCH"
}
trap cleanup EXIT

# 25 messages in the service inbox, filed by a server run without valgrind.
data=$SCRATCH/data
deliver_bench_messages "$data" "$SCRATCH"
port=$(free_port)
"$bin/mailhost" serve --addr "127.0.0.1:$port" --data-dir "$data" --agent-key "$KEY" >/dev/null 2>&1 &
filer=$!
for _ in $(seq 1 100); do
  listed=$(curl -s "127.0.0.1:$port/inbox?limit=25" -H "Authorization: Bearer $KEY" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("messages", [])))' 2>/dev/null || echo 0)
  [ "$listed" = 25 ] && break
  sleep 0.2
done
kill $filer && wait $filer 2>/dev/null || true
[ "$listed" = 25 ] || { echo "the inbox never listed 25 messages" >&2; exit 1; }

# Prints the instructions per request of one URL served by a command run under
# callgrind: instrumentation starts after a warm-up, stops after 10 s of load.
count() {
  local name=$1 url=$2 port=$3
  shift 3
  RUST_LOG=info valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$SCRATCH/$name.out" "$@" \
    >"$SCRATCH/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 300); do
    curl -sf -o /dev/null "127.0.0.1:$port/credits" -H "Authorization: Bearer $KEY" && break
    sleep 0.2
  done
  local auth=(-H "Authorization: Bearer $KEY")
  wrk -t1 -c4 -d3s "${auth[@]}" "$url" >/dev/null
  callgrind_control -i on "$pid" >/dev/null 2>&1
  local requests
  requests=$(wrk -t1 -c4 -d10s "${auth[@]}" "$url" | awk '/requests in/ {print $1}')
  callgrind_control -i off "$pid" >/dev/null 2>&1
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid" && wait "$pid" 2>/dev/null || true
  local total
  total=$(cat "$SCRATCH/$name.out"* | awk '/^totals:/ {s += $2} END {print s}')
  echo $((total / requests))
}

port=$(free_port)
bare=$(count bare "http://127.0.0.1:$port/credits" "$port" "$bin/bare-axum" "127.0.0.1:$port")
port=$(free_port)
credits=$(count credits "http://127.0.0.1:$port/credits" "$port" \
  "$bin/mailhost" serve --addr "127.0.0.1:$port" --data-dir "$data" --agent-key "$KEY")
port=$(free_port)
inbox=$(count inbox "http://127.0.0.1:$port/inbox?limit=25" "$port" \
  "$bin/mailhost" serve --addr "127.0.0.1:$port" --data-dir "$data" --agent-key "$KEY")
# With no memo of encoded rows, every read costs what a page's first read costs.
port=$(free_port)
first=$(MAILHOST_LIST_MEMO_BYTES=0 count first "http://127.0.0.1:$port/inbox?limit=25" "$port" \
  "$bin/mailhost" serve --addr "127.0.0.1:$port" --data-dir "$data" --agent-key "$KEY")

echo "instructions per request (callgrind, $PROFILE profile, wrk -t1 -c4, request log on)"
printf '%-34s %9s\n' "bare axum, GET /credits (static)" "$bare"
printf '%-34s %9s   %s\n' "mailhost GET /credits, agent key" "$credits" "$(awk "BEGIN {printf \"%.2fx bare\", $credits / $bare}")"
printf '%-34s %9s   %s\n' "mailhost GET /inbox, 25 rows again" "$inbox" "$(awk "BEGIN {printf \"%.2fx bare\", $inbox / $bare}")"
printf '%-34s %9s   %s\n' "mailhost GET /inbox, first read" "$first" "$(awk "BEGIN {printf \"%.2fx bare\", $first / $bare}")"
