"""The soak's traffic: onboarding, the agents' loops, the inbound stream and
the webhook registrations. Every request is recorded (route, status, time,
latency, error, Retry-After) for the invariants and the report."""

import http.client
import json
import os
import random
import re
import threading
import time
import urllib.parse

SOAK_SENDER = "sender@outside.soak.test"


class Recorder:
    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def add(self, call):
        with self.lock:
            self.calls.append(call)


class Client:
    """One keep-alive connection per thread; a dropped connection is opened
    again on the next request."""

    def __init__(self, server, recorder):
        self.server, self.recorder = server, recorder
        self.local = threading.local()

    def call(self, method, path, key=None, body=None, route=None, timeout=30, headers=None, source=None):
        conn = getattr(self.local, "conn", None)
        if source:
            # A connection of its own from this loopback address, which the
            # per-address limits of onboarding count apart.
            if conn:
                conn.close()
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout,
                                                                source_address=(source, 0))
            self.local.port = None
        elif conn is None or getattr(self.local, "port", None) != self.server.port:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=timeout)
            self.local.port = self.server.port
        conn.timeout = timeout
        if conn.sock:
            conn.sock.settimeout(timeout)
        sent_headers = dict(headers or {})
        if key:
            sent_headers["Authorization"] = f"Bearer {key}"
        data = None
        if body is not None:
            data = json.dumps(body)
            sent_headers["Content-Type"] = "application/json"
        started = time.time()
        record = {"route": route or f"{method} {path.split('?')[0]}", "start": started, "status": None}
        try:
            conn.request(method, path, body=data, headers=sent_headers)
            res = conn.getresponse()
            raw = res.read()
            record["status"] = res.status
            record["retry_after"] = res.getheader("Retry-After")
            try:
                answer = json.loads(raw) if raw else None
            except ValueError:
                answer = {"raw": raw[:200].decode("latin-1")}
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            self.local.conn = None
            record["failure"] = "timeout" if "timed out" in str(e) else "connection"
            answer = None
            if record["failure"] == "connection":
                # Refused at once while the server is down: no hot loop.
                time.sleep(0.2)
        record["end"] = time.time()
        if isinstance(answer, dict) and answer.get("ok") is False:
            record["error"] = answer.get("error")
        self.recorder.add(record)
        if record["status"] == 503 and (record.get("retry_after") or "").isdigit():
            # A client that reads Retry-After waits as told.
            time.sleep(min(5, int(record["retry_after"])))
        return record, answer


# ---------------------------------------------------------------- onboarding


def outbox_code(data_dir, to, deadline=30):
    started = time.time()
    to_line = f"To: {to}".lower()
    while time.time() - started < deadline:
        outbox = os.path.join(data_dir, "outbox")
        for name in sorted(os.listdir(outbox)) if os.path.isdir(outbox) else []:
            with open(os.path.join(outbox, name), errors="replace") as f:
                text = f.read()
            if any(line.strip().lower() == to_line for line in text.splitlines()):
                m = re.search(r"Your access code is (\d{8})", text)
                if m:
                    return m.group(1)
        time.sleep(0.1)
    raise RuntimeError(f"no access code mailed to {to}")


def must(pair, what):
    record, answer = pair
    if record["status"] != 200:
        raise RuntimeError(f"{what}: {record} {answer}")
    return answer


def onboard(client, server, dns, operator, i):
    """Account i: allowlisted, verified, a verified domain and a hosted
    mailbox agent@; its standard key and mailbox."""
    domain = f"a{i}.soak.test"
    owner = f"owner@{domain}"
    source = f"127.0.{1 + i // 250}.{2 + i % 250}"
    must(client.call("POST", "/api/admin/domainAllowlist", operator, {"domain": domain}, "onboard"), "allowlist")
    asked = must(client.call("POST", "/requestAccess", None, {"contactEmail": owner, "domain": domain,
                                                              "agentName": f"soak {i}", "intendedUse": "soak"},
                             "onboard", source=source), "requestAccess")
    code = outbox_code(server.data_dir, owner)
    ready = must(client.call("POST", "/verifyAccessRequest", None, {"requestId": asked["requestId"], "code": code},
                             "onboard", source=source), "verifyAccessRequest")
    key = ready["apiKey"]
    added = must(client.call("POST", "/addDomain", key, {"domain": domain}, "onboard"), "addDomain")
    dns.publish(added["domain"])
    verified = must(client.call("POST", "/verifyDomain", key, {"domainId": domain}, "onboard"), "verifyDomain")
    if verified.get("verified") is not True:
        raise RuntimeError(f"domain {domain} not verified: {verified}")
    must(client.call("POST", "/addMailbox", key, {"domainId": domain, "localPart": "agent", "mode": "hosted",
                                                  "forwardTo": []}, "onboard"), "addMailbox")
    return {"i": i, "key": key, "domain": domain, "mailbox": f"agent@{domain}"}


# ---------------------------------------------------------------- agents


class Agent:
    """One account's loop: reads, waits, marks and moves threads, and sends
    about every `send_every` seconds (the account may send 5 a minute), half
    with an Idempotency-Key; a keyed send is retried with the same key after
    a timeout, a dropped connection or a 5xx, some after a deliberately short
    client timeout. With `think` seconds it pauses that long (0.5x to 1.5x)
    after each action."""

    def __init__(self, account, client, sends, deadline, send_every, think, seed):
        self.account, self.client, self.sends, self.deadline = account, client, sends, deadline
        self.send_every, self.think = send_every, think
        self.rng = random.Random(seed)
        self.n = 0
        self.next_send = time.time() + self.rng.uniform(0, send_every)
        self.threads = []

    def run(self):
        while time.time() < self.deadline:
            if time.time() >= self.next_send:
                self.send()
                self.next_send = time.time() + self.rng.uniform(0.5, 1.5) * self.send_every
                continue
            action = self.rng.choices([self.list, self.wait, self.read_thread, self.mark, self.move, self.threads_view,
                                       self.credits], [30, 8, 10, 12, 6, 10, 4])[0]
            action()
            if self.think:
                time.sleep(self.rng.uniform(0.5, 1.5) * self.think)

    def get(self, query, route, timeout=30):
        return self.client.call("GET", "/inbox?" + urllib.parse.urlencode(query), self.account["key"],
                                route=route, timeout=timeout)

    def list(self):
        _, answer = self.get({"limit": 25}, "GET /inbox (list)")
        if answer and answer.get("messages"):
            self.threads = [m["threadId"] for m in answer["messages"] if m.get("threadId")]

    def wait(self):
        self.get({"wait": 1}, "GET /inbox (wait)", timeout=30)

    def threads_view(self):
        self.get({"view": "threads", "folder": self.rng.choice(["inbox", "archive"])}, "GET /inbox (threads)")

    def read_thread(self):
        if self.threads:
            self.get({"thread": self.rng.choice(self.threads)}, "GET /inbox (thread)")

    def mark(self):
        if self.threads:
            body = {"thread": self.rng.choice(self.threads), "unread": self.rng.random() < 0.5}
            self.client.call("POST", "/inbox", self.account["key"], body, "POST /inbox (mark)")

    def move(self):
        if self.threads:
            body = {"thread": self.rng.choice(self.threads), "folder": self.rng.choice(["inbox", "archive", "trash"])}
            self.client.call("POST", "/inbox", self.account["key"], body, "POST /inbox (move)")

    def credits(self):
        self.client.call("GET", "/credits", self.account["key"], route="GET /credits")

    def send(self):
        self.n += 1
        tag = f"soak-{self.account['i']}-{self.n}"
        keyed = self.rng.random() < 0.5
        body = {"to": f"rcpt{self.n}@remote.soak.test", "subject": tag, "text": f"Soak message {tag}."}
        headers = {"Idempotency-Key": tag} if keyed else {}
        attempts = []
        # A keyed send sometimes gives up almost at once, as a client with
        # a short timeout would, and tries again with the same key.
        first_timeout = 0.05 if keyed and self.rng.random() < 0.15 else 20
        for attempt in range(6 if keyed else 2):
            record, answer = self.client.call("POST", "/sendMail", self.account["key"], body, "POST /sendMail",
                                              timeout=first_timeout if attempt == 0 else 20, headers=headers)
            attempts.append({"status": record["status"], "failure": record.get("failure"),
                             "error": record.get("error"), "start": record["start"], "end": record["end"],
                             "messageId": (answer or {}).get("messageId") if record["status"] == 200 else None})
            retry = record.get("failure") or record["status"] in (500, 502, 503, 504) or (
                record["status"] == 409 and (answer or {}).get("code") == "idempotency_in_progress")
            if not retry or time.time() > self.deadline + 30:
                break
            time.sleep(min(8.0, 0.5 * 2 ** attempt) + self.rng.uniform(0, 0.5))
        self.sends.append({"account": self.account["i"], "tag": tag, "keyed": keyed, "attempts": attempts})


# ---------------------------------------------------------------- inbound


def generated(i, mailbox, body_extra=""):
    return (f"From: Soak Sender <{SOAK_SENDER}>\r\nTo: {mailbox}\r\nSubject: inbound {i}\r\n"
            f"Message-ID: <gen-{i}@outside.soak.test>\r\nDate: Wed, 25 Nov 2026 07:00:00 +0000\r\n"
            f"\r\nHello number {i}.{body_extra}\r\n").encode()


class Inbound:
    """Drops mail with `mailhost deliver` in batches: generated messages to
    the agents' mailboxes and to the service's inbox@, files of the shared
    corpus, and a share delivered twice (the same bytes, as a mail host
    retrying a delivery would)."""

    def __init__(self, server, bucket, accounts, service_inbox, corpus, work, deadline, rate, seed):
        self.server, self.bucket, self.accounts = server, bucket, accounts
        self.service_inbox, self.corpus, self.deadline, self.rate = service_inbox, corpus, deadline, rate
        self.dir = os.path.join(work, "inbound")
        os.makedirs(self.dir, exist_ok=True)
        self.rng = random.Random(seed)
        self.drops = []  # {key, file, recipient, kind, messageId, at}
        self.failures = []
        self.n = 0

    def run(self):
        while time.time() < self.deadline:
            started = time.time()
            batch = self.batch(max(1, int(self.rate)))
            for recipient, files in batch.items():
                self.deliver(recipient, files)
            time.sleep(max(0.0, 1.0 - (time.time() - started)))

    def batch(self, count):
        out = {}
        for _ in range(count):
            self.n += 1
            roll = self.rng.random()
            if roll < 0.1 and self.corpus:
                recipient = self.rng.choice(self.accounts)["mailbox"]
                out.setdefault(recipient, []).append((self.rng.choice(self.corpus), "corpus", None))
                continue
            recipient = self.service_inbox if roll < 0.2 else self.rng.choice(self.accounts)["mailbox"]
            path = os.path.join(self.dir, f"gen-{self.n}.eml")
            with open(path, "wb") as f:
                f.write(generated(self.n, recipient))
            entry = (path, "generated", f"gen-{self.n}@outside.soak.test")
            out.setdefault(recipient, []).append(entry)
            if self.rng.random() < 0.15:
                out[recipient].append(entry)
        return out

    def deliver(self, recipient, files):
        pending = list(files)
        for _ in range(5):
            try:
                keys = self.server.deliver(recipient, [f for f, _, _ in pending], self.bucket)
            except RuntimeError as e:
                self.failures.append(str(e)[:300])
                keys = []
            now = time.time()
            for key, (path, kind, mid) in zip(keys, pending):
                self.drops.append({"key": key, "file": path, "recipient": recipient, "kind": kind,
                                   "messageId": mid, "at": now})
            pending = pending[len(keys):]
            if not pending:
                return
            time.sleep(1)


class WebhookRegistrar:
    """The agent key (re)registers its webhook now and then; mail to the
    service's inbox@ fires deliveries at it."""

    def __init__(self, client, agent_key, url, deadline):
        self.client, self.agent_key, self.url, self.deadline = client, agent_key, url, deadline

    def run(self):
        rotate = False
        while time.time() < self.deadline:
            self.client.call("POST", "/webhooks", self.agent_key, {"url": self.url, "rotateSecret": rotate,
                                                                   "enabled": True}, "POST /webhooks")
            self.client.call("GET", "/webhooks", self.agent_key, route="GET /webhooks")
            rotate = not rotate
            time.sleep(5)


class Probe:
    """Drop-to-listed latency: every few seconds one message to account 0,
    dropped with `mailhost deliver`, then read by its Message-ID every 20 ms
    until the server has it (the time `deliver` itself takes is left out)."""

    def __init__(self, server, client, bucket, account, work, deadline):
        self.server, self.client, self.bucket, self.account = server, client, bucket, account
        self.path = os.path.join(work, "probe.eml")
        self.deadline = deadline
        self.samples = []  # seconds, or None when not listed within 30 s

    def run(self):
        n = 0
        while time.time() < self.deadline:
            n += 1
            mid = f"probe-{n}@outside.soak.test"
            with open(self.path, "wb") as f:
                f.write(generated(f"probe-{n}", self.account["mailbox"]).replace(
                    f"<gen-probe-{n}@outside.soak.test>".encode(), f"<{mid}>".encode()))
            try:
                self.server.deliver(self.account["mailbox"], [self.path], self.bucket)
            except RuntimeError:
                time.sleep(2)
                continue
            dropped = time.time()
            query = "/inbox?" + urllib.parse.urlencode({"messageId": f"<{mid}>"})
            listed = None
            while time.time() - dropped < 30:
                record, _ = self.client.call("GET", query, self.account["key"], route="probe")
                if record["status"] == 200:
                    listed = time.time() - dropped
                    break
                time.sleep(0.02)
            self.samples.append(listed)
            time.sleep(3)
