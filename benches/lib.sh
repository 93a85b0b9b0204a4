# Shared by benches/http.sh and benches/instructions.sh (sourced, not run):
# the binaries they measure, a free port, and the 25 messages of the inbox list.

# Builds the local server and the bare axum server in $PROFILE (unless
# NO_BUILD is set) and sets $bin to the directory holding them.
bench_binaries() {
  [ -n "${NO_BUILD:-}" ] || cargo build -q --profile "$PROFILE" -p mailhost --bin mailhost -p bare --bin bare-axum
  local target_dir
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  # Cargo's built-in profiles write to debug/ (dev, test) and release/ (release, bench).
  case $PROFILE in
    dev | test) bin=$target_dir/debug ;;
    release | bench) bin=$target_dir/release ;;
    *) bin=$target_dir/$PROFILE ;;
  esac
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Drops 25 short messages for the service inbox into data directory $1
# (scratch files in $2); a running server's poller files them.
deliver_bench_messages() {
  local data=$1 scratch=$2
  for i in $(seq 1 25); do
    printf 'Delivered-To: inbox@mailhost.localhost\r\nFrom: a@example.org\r\nTo: inbox@mailhost.localhost\r\nSubject: Bench %s\r\nMessage-ID: <bench-%s@example.org>\r\n\r\nA short message.\r\n' "$i" "$i" >"$scratch/m.eml"
    "$bin/mailhost" deliver --data-dir "$data" "$scratch/m.eml" >/dev/null
  done
}
