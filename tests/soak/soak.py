#!/usr/bin/env python3
"""The soak: the real `mailhost` binary on DynamoDB Local (behind a fault
proxy), S3 in moto (behind another), an SMTP relay, a webhook receiver and an
authoritative DNS server; N accounts onboarded through the public routes,
then agents, an inbound stream and faults for a bounded time; then the
invariants, printed, and a report. Exits 1 when an invariant fails.

Run it with scripts/soak (which builds the binary and finds the tools)."""

import argparse
import glob
import json
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import boto3  # noqa: E402
from botocore.config import Config as BotoConfig  # noqa: E402

import checks  # noqa: E402
import faults  # noqa: E402
import floor  # noqa: E402
import imap  # noqa: E402
import load  # noqa: E402
import report  # noqa: E402
import standins  # noqa: E402
import storage  # noqa: E402
from server import Server, dynamodb_local, moto  # noqa: E402

SERVICE_DOMAIN = "svc.soak.test"
OPERATOR = "ops@operators.soak.test"


def log(line):
    print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)


def arguments():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=5)
    p.add_argument("--agents", type=int, default=20)
    p.add_argument("--inbound-rate", type=float, default=None, help="messages dropped per second (default agents/4)")
    p.add_argument("--send-every", type=float, default=15.0, help="seconds between one agent's sends")
    p.add_argument("--think", type=float, default=0.0,
                   help="seconds an agent pauses after each answer (default 0: a closed loop that saturates the "
                        "machine; a pause offers a bounded load, whose latencies are the service's, not a queue's)")
    p.add_argument("--kills", type=int, default=None, help="server SIGKILLs (default one a minute, at least 2)")
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--no-ddb-restart", action="store_true")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--binary", required=True)
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/mailhost"))
    p.add_argument("--corpus", default=None)
    p.add_argument("--report", default=None, help="where the report's JSON goes (a .md is written beside it)")
    p.add_argument("--imap-mailboxes", type=int, default=0,
                   help="hosted mailboxes a mail app also uses over IMAP, through a real mail host, with the mailbox "
                        "sync's faults (imap.py; needs root, Postfix and Dovecot, and is left out without them; "
                        "default 0; scripts/test runs 2)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args()


def aws_env(dynamo_url, s3_url):
    return {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": s3_url, "AWS_ENDPOINT_URL_DYNAMODB": dynamo_url}


class CpuMeter:
    """CPU seconds each process of the soak used during the load (a process
    started again is counted from its new start), the soak's own (its
    threads: agents, stand-ins), and the whole machine's, from /proc."""

    def __init__(self, processes, deadline):
        self.processes, self.deadline = processes, deadline
        self.used = {name: 0.0 for name in processes}
        self.last = {}
        self.started = time.time()
        self.own0, self.machine0 = os.times(), machine_busy()

    def run(self):
        while True:
            for name, proc in self.processes.items():
                p = proc()
                pid = getattr(p, "pid", None)
                cpu = standins.process_cpu_seconds(pid) if pid else None
                if cpu is None:
                    continue
                last_pid, last_cpu = self.last.get(name, (None, None))
                if last_pid == pid and cpu >= last_cpu:
                    self.used[name] += cpu - last_cpu
                self.last[name] = (pid, cpu)
            if time.time() >= self.deadline:
                break
            time.sleep(1)
        own = os.times()
        self.summary = {name: round(v, 1) for name, v in self.used.items()}
        self.summary["soak (load, stand-ins)"] = round(own.user + own.system - self.own0.user - self.own0.system, 1)
        self.summary["mailhost deliver and killed servers"] = round(
            own.children_user + own.children_system - self.own0.children_user - self.own0.children_system, 1)
        busy, total = machine_busy()
        self.summary["machine (all processes, both cores)"] = round(busy - self.machine0[0], 1)
        self.summary["machine capacity"] = round(total - self.machine0[1], 1)
        self.summary["seconds"] = round(time.time() - self.started, 1)


def machine_busy():
    """(busy, total) CPU seconds of the machine since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / hz, sum(fields[:8]) / hz


class Run:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed if args.seed is not None else random.randrange(1 << 30)
        self.work = tempfile.mkdtemp(prefix="mailhost-soak-")
        self.children = []
        self.imap = None

    def stand_up(self):
        args = self.args
        self.ddb = dynamodb_local(args.cache, self.work)
        self.moto = moto(os.path.join(args.cache, "venv"), self.work)
        for proc in (self.ddb, self.moto):
            proc.start()
            self.children.append(proc)
        standins.wait_port(self.ddb.port, "DynamoDB Local", 120)
        standins.wait_port(self.moto.port, "moto", 60)
        self.dynamo_proxy = standins.FaultProxy(self.ddb.port, "dynamodb")
        self.s3_proxy = standins.FaultProxy(self.moto.port, "s3")
        self.dns = standins.Dns()
        self.relay = standins.Relay()
        ca, cert, key = standins.make_certs(self.work)
        self.webhooks = standins.Webhooks(cert, key)
        self.bucket = f"soak-{self.seed:x}"
        self.s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{self.moto.port}", region_name="us-east-1",
                               aws_access_key_id="test", aws_secret_access_key="test",
                               config=BotoConfig(s3={"addressing_style": "path"}))
        self.s3.create_bucket(Bucket=self.bucket)
        # Versioned, as template.yaml's bucket is: a filed spool file is
        # deleted and its version kept (common/src/service/receiving/poller.rs).
        self.s3.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"})
        env = dict(os.environ, **aws_env(self.dynamo_proxy.url, self.s3_proxy.url))
        env.update({
            "MAILHOST_STORE": "dynamodb", "MAILHOST_TABLE": f"soak-{self.seed:x}", "MAILHOST_BUCKET": self.bucket,
            "MAILHOST_SECRETS": "dir", "MAILHOST_SYSTEM_MAIL": "outbox",
            "MAILHOST_SMTP_URL": f"smtp://127.0.0.1:{self.relay.port}",
            "MAILHOST_SERVICE_DOMAIN": SERVICE_DOMAIN, "MAILHOST_MAIL_HOST": "mx.svc.soak.test",
            "MAILHOST_DNS_SERVER": f"127.0.0.1:{self.dns.port}", "MAILHOST_OPERATOR_EMAILS": OPERATOR,
            "MAILHOST_WEBHOOK_ALLOW_HOSTS": "localhost", "MAILHOST_WEBHOOK_CA_FILE": ca,
            "MAILHOST_POLL_INTERVAL": "2", "RUST_LOG": "info",
        })
        env.pop("MAILHOST_AGENT_KEY", None)
        self.server = Server(args.binary, self.work, env)
        self.server.start()
        self.children.append(self.server.process)
        self.recorder = load.Recorder()
        self.client = load.Client(self.server, self.recorder)
        self.webhook_url = f"https://localhost:{self.webhooks.port}/hook"
        log(f"work directory {self.work}; server on {self.server.base}; seed {self.seed}")

    def onboard(self):
        operator = self.server.token(OPERATOR, operator=True)
        started = time.time()
        with ThreadPoolExecutor(4) as pool:
            self.accounts = list(pool.map(lambda i: load.onboard(self.client, self.server, self.dns, operator, i),
                                          range(self.args.agents)))
        self.onboard_seconds = time.time() - started
        self.agent_key = self.server.agent_key()
        log(f"onboarded {len(self.accounts)} accounts in {self.onboard_seconds:.1f}s")

    def corpus(self):
        root = self.args.corpus or os.path.join(HERE, "../../../shared/corpus")
        files = sorted(glob.glob(os.path.join(root, "eml/**/*.eml"), recursive=True))
        return files or sorted(glob.glob(os.path.join(HERE, "../fixtures/eml/*.eml")))

    def play(self):
        args = self.args
        seconds = args.minutes * 60
        kills = args.kills if args.kills is not None else max(2, int(args.minutes))
        if args.imap_mailboxes > 0:
            why_not = imap.unavailable()
            if why_not and os.environ.get("MAILHOST_TEST_REQUIRE_ALL") == "1":
                # scripts/test: nothing may be left out for want of a part.
                raise RuntimeError(f"the IMAP lane cannot run: {why_not}")
            if why_not:
                log(f"IMAP lane left out: {why_not}")
            else:
                self.imap = imap.Lane(args.binary, self.server, self.client, self.bucket, self.accounts,
                                      args.imap_mailboxes, log)
        self.plan = [] if args.no_faults else faults.schedule(seconds, self.seed, kills,
                                                              ddb_restart=not args.no_ddb_restart,
                                                              imap=self.imap is not None)
        log("fault schedule (seconds from the start of the load):")
        for start, length, kind in self.plan:
            print(f"    +{start:7.1f}s  {kind:16s} {length:5.1f}s", flush=True)
        if self.imap:
            self.imap.start(time.time() + seconds, self.seed)
        self.t0 = time.time()
        deadline = self.t0 + seconds
        self.cpu = CpuMeter({"mailhost": lambda: self.server.process.proc, "dynamodb-local": lambda: self.ddb.proc,
                             "moto": lambda: self.moto.proc, "dynamodb proxy": lambda: self.dynamo_proxy.process,
                             "s3 proxy": lambda: self.s3_proxy.process}, deadline)
        threading.Thread(target=self.cpu.run, daemon=True).start()
        self.sends = []
        rate = args.inbound_rate if args.inbound_rate is not None else max(1.0, args.agents / 4)
        self.inbound = load.Inbound(self.server, self.bucket, self.accounts, f"inbox@{SERVICE_DOMAIN}",
                                    self.corpus(), self.work, deadline, rate, self.seed)
        self.player = faults.Player(self.plan, self.t0, self.dynamo_proxy, self.s3_proxy, self.relay, self.webhooks,
                                    self.server, self.ddb, log, mail_host=self.imap and self.imap.host)
        self.probe = load.Probe(self.server, self.client, self.bucket, self.accounts[0], self.work, deadline)
        workers = [threading.Thread(target=self.player.run, daemon=True),
                   threading.Thread(target=self.probe.run, daemon=True),
                   threading.Thread(target=self.inbound.run, daemon=True),
                   threading.Thread(target=load.WebhookRegistrar(self.client, self.agent_key, self.webhook_url,
                                                                 deadline).run, daemon=True)]
        for n, account in enumerate(self.accounts):
            agent = load.Agent(account, self.client, self.sends, deadline, args.send_every, args.think,
                               self.seed + n)
            workers.append(threading.Thread(target=agent.run, daemon=True))
        if self.imap:
            workers.extend(self.imap.threads())
        for w in workers:
            w.start()
        log(f"load running for {seconds:.0f}s: {len(self.accounts)} agents, {rate:g} inbound/s")
        for w in workers:
            w.join()
        self.t_end = time.time()
        log("load over")

    def settle(self):
        """Faults off, the server up, the spool drained."""
        for proxy in (self.dynamo_proxy, self.s3_proxy):
            proxy.mode = "ok"
        self.relay.mode = self.webhooks.mode = "ok"
        if self.server.process.proc.poll() is not None:
            self.server.start()
        if self.imap:
            self.imap.settle()
        self.drained = checks.wait_drained(self.s3, self.bucket, 120)
        time.sleep(3)

    def check(self):
        results = {}
        mailboxes = {a["mailbox"]: a["key"] for a in self.accounts}
        rows = {mb: checks.page_all(self.client, key, {}, "messages") for mb, key in mailboxes.items()}
        rows[f"inbox@{SERVICE_DOMAIN}"] = checks.page_all(self.client, self.agent_key, {}, "messages")
        results["inbound filed once (or failed once, with a reason)"] = checks.inbound(
            self.inbound.drops, self.s3, self.bucket, rows)
        if not self.drained:
            results["inbound filed once (or failed once, with a reason)"][0].insert(0, "the spool never drained")
        results["one relay copy per Idempotency-Key; every 200 reached the relay"] = checks.sends(
            self.sends, self.relay.received, self.player.windows)
        balances = {}
        for a in self.accounts:
            record, answer = self.client.call("GET", "/credits", a["key"], route="check")
            balances[a["i"]] = (answer or {}).get("credits", {}).get("remaining") if record["status"] == 200 else None
        results["credits = initial - charged sends"] = checks.credits(self.sends, balances)
        results["rate windows never exceeded"] = (checks.rate_windows(self.sends), None)
        results["unreadCount = unread rows of the thread"] = checks.unread_counts(self.client, self.accounts)
        load_calls = [c for c in self.recorder.calls if c["route"] not in ("check", "onboard")]
        results["no 5xx but 503 + Retry-After (store failing) or 500 Send failed (relay failing)"] = checks.statuses(
            load_calls, self.player.windows)
        results["no panic in the server log"] = (checks.panics(self.server.log), None)
        if self.imap:
            results[imap.INVARIANT] = self.imap.check(self.sends)
            # The agent's own storage requests are no route's.
            self.imap.host.script("mailbox-sync-stop", self.imap.host.dir)
        results["memory (RSS) roughly flat"] = checks.memory(self.server.rss, self.t0, self.t_end)
        return results

    def count_storage(self):
        """Storage requests per request of each route, one at a time (storage.py),
        on the server started again with its jobs far apart."""
        operator = self.server.token(OPERATOR, operator=True)
        fresh = load.onboard(self.client, self.server, self.dns, operator, len(self.accounts))
        self.server.kill()
        self.server.process.env = dict(self.server.env, MAILHOST_POLL_INTERVAL="3600")
        self.server.start()
        time.sleep(1)
        log("storage requests per request, one route at a time:")
        self.storage = storage.measure(self.client, self.dynamo_proxy, self.accounts[0], fresh, log)

    def stop(self):
        if self.imap:
            self.imap.stop(self.args.keep or bool(os.environ.get("SOAK_KEEP")))
        for proc in reversed(self.children):
            proc.stop()
        self.relay.stop()


def main():
    args = arguments()
    run = Run(args)
    try:
        run.stand_up()
        log("DynamoDB Local alone, through the proxy (the floor under the figures):")
        run.floor = floor.measure(run.dynamo_proxy.url, args.agents, log)
        run.onboard()
        run.play()
        run.settle()
        results = run.check()
        run.count_storage()
        results["storage requests per send and per read as docs/data-model.md lists them"] = storage.check(
            run.storage)
        failed = report.print_invariants(results)
        summary = report.build(run, results)
        path = args.report or os.path.join(run.work, "soak-report.json")
        report.write(summary, path)
        log(f"report: {path} and {os.path.splitext(path)[0]}.md")
    finally:
        run.stop()
        if not args.keep and not os.environ.get("SOAK_KEEP"):
            import shutil
            shutil.rmtree(run.work, ignore_errors=True)
        else:
            log(f"kept {run.work}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
