"""The fault schedule: drawn from a seed before the run, printed, then played.

Two lanes run side by side: the store lane (DynamoDB throttling, 500s and
latency through the fault proxy, S3 errors and slow answers, DynamoDB Local
restarted, the server killed with SIGKILL) and the mail lane (the relay
answering 421 or 451, dropping the connection after DATA, hanging; the
webhook receiver answering 500 or too slowly); with the IMAP lane (imap.py) a
third, the mail host's: the mailbox sync agent SIGKILLed and started again,
Dovecot restarted, the agent's door to the service answering 503."""

import random
import threading
import time

STORE_FAULTS = ["dynamo-throttle", "dynamo-500", "dynamo-latency", "s3-errors", "s3-latency", "kill", "ddb-restart"]
MAIL_FAULTS = ["relay-421", "relay-451", "relay-drop", "relay-hang", "webhook-500", "webhook-slow"]
IMAP_FAULTS = ["sync-kill", "dovecot-restart", "sync-503"]
# What counts as the store failing, for the rule on 503s.
STORE_KINDS = {"dynamo-throttle", "dynamo-500", "dynamo-latency", "s3-errors", "s3-latency", "ddb-restart", "kill"}
RELAY_KINDS = {"relay-421", "relay-451", "relay-drop", "relay-hang"}


def schedule(seconds, seed, kills, ddb_restart=True, imap=False):
    """[(start offset, duration, kind)], sorted by start."""
    rng = random.Random(seed)
    warm = min(10.0, seconds * 0.1)
    span = seconds - warm - 5
    out = []
    for lane in (STORE_FAULTS, MAIL_FAULTS) + ((IMAP_FAULTS,) if imap else ()):
        kinds = [k for k in lane if k != "kill" and (ddb_restart or k != "ddb-restart")]
        rng.shuffle(kinds)
        rounds = max(1, int(span // (len(kinds) * 20)))
        kinds = kinds * rounds
        slot = span / len(kinds)
        for n, kind in enumerate(kinds):
            length = min(slot * 0.7, 30.0)
            start = warm + n * slot + rng.uniform(0, slot - length)
            out.append((round(start, 1), round(length, 1), kind))
    for _ in range(kills):
        out.append((round(warm + rng.uniform(0, span), 1), 0.0, "kill"))
    return sorted(out)


class Player:
    """Plays a schedule against the stand-ins and the server, and writes
    down when each fault really started and ended."""

    def __init__(self, plan, t0, dynamo, s3, relay, webhooks, server, ddb, log, mail_host=None):
        self.plan, self.t0 = plan, t0
        self.mail_host = mail_host
        self.dynamo, self.s3, self.relay, self.webhooks = dynamo, s3, relay, webhooks
        self.server, self.ddb, self.log = server, ddb, log
        self.windows = []  # {kind, start, end}
        self.lock = threading.Lock()
        self.kill_lock = threading.Lock()
        self.threads = []

    def run(self):
        for start, length, kind in self.plan:
            thread = threading.Thread(target=self._play, args=(start, length, kind), daemon=True)
            thread.start()
            self.threads.append(thread)
        for thread in self.threads:
            thread.join()

    def _play(self, start, length, kind):
        time.sleep(max(0.0, self.t0 + start - time.time()))
        began = time.time()
        self.log(f"fault {kind} begins (+{began - self.t0:.1f}s, {length}s)")
        try:
            getattr(self, "_" + kind.replace("-", "_"))(length)
        except Exception as e:  # noqa: BLE001 - a fault that failed to play is reported, not fatal
            self.log(f"fault {kind} could not be played: {e}")
        ended = time.time()
        with self.lock:
            self.windows.append({"kind": kind, "start": began, "end": ended})
        self.log(f"fault {kind} ends (+{ended - self.t0:.1f}s)")

    def _proxy(self, proxy, mode, rate, length, latency=0.0):
        proxy.latency, proxy.rate, proxy.mode = latency, rate, mode
        time.sleep(length)
        proxy.mode = "ok"

    def _dynamo_throttle(self, length):
        # Both throttling codes, a third of the calls.
        end = time.time() + length
        while time.time() < end:
            self._proxy(self.dynamo, random.choice(["throughput", "throttling"]), 0.33, min(1.0, end - time.time()))

    def _dynamo_500(self, length):
        self._proxy(self.dynamo, "500", 0.2, length)

    def _dynamo_latency(self, length):
        self._proxy(self.dynamo, "latency", 0.5, length, latency=0.25)

    def _s3_errors(self, length):
        self._proxy(self.s3, "mixed", 0.3, length, latency=0.5)

    def _s3_latency(self, length):
        self._proxy(self.s3, "latency", 0.7, length, latency=0.4)

    def _ddb_restart(self, length):
        self.ddb.stop()
        time.sleep(min(length, 2.0))
        self.ddb.start()
        from standins import wait_port
        wait_port(self.ddb.port, "DynamoDB Local", 120)
        time.sleep(max(0.0, length - 2.0))

    def _kill(self, _length):
        with self.kill_lock:
            self.server.kill()
            time.sleep(random.uniform(0.2, 2.0))
            self.server.start()

    def _relay(self, mode, length):
        self.relay.mode = mode
        time.sleep(length)
        self.relay.mode = "ok"

    def _relay_421(self, length):
        self._relay("421", length)

    def _relay_451(self, length):
        self._relay("451", length)

    def _relay_drop(self, length):
        self._relay("drop", length)

    def _relay_hang(self, length):
        self._relay("hang", length)

    def _webhook(self, mode, length):
        self.webhooks.mode = mode
        time.sleep(length)
        self.webhooks.mode = "ok"

    def _webhook_500(self, length):
        self._webhook("500", length)

    def _webhook_slow(self, length):
        self._webhook("slow", length)

    def _sync_kill(self, length):
        # Killed mid-run, away a while, started again from its saved state.
        self.mail_host.kill_sync()
        time.sleep(min(length, random.uniform(2.0, 10.0)))
        self.mail_host.start_sync()

    def _dovecot_restart(self, _length):
        self.mail_host.restart_dovecot()

    def _sync_503(self, length):
        self._proxy(self.mail_host.door, "slowdown", 1.0, length)
