"""The IMAP lane (issue 42): a real mail host beside the soak's server
(scripts/mail-host: Postfix, Dovecot and `mailhost mailbox-sync`, the agent
reaching the service through a door of its own that the fault player can
make answer 503), and a person's mail app on some accounts' hosted mailboxes
(Python's imaplib: appending old mail as a migration tool does, setting and
clearing \\Seen, moving between INBOX, Archive and Trash, expunging from
Trash) while the soak's agents read, mark, move and send through the API on
the same mailboxes. Its faults (faults.py): the sync agent SIGKILLed and
started again, Dovecot restarted, the agent's door answering 503.

The invariant, once the faults are over: within a minute both sides list
the same messages with the same flag and folder, nothing the app appended is
lost or doubled, nothing it expunged is left, and every send that answered
200 is in Sent once."""

import imaplib
import os
import random
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests/python"))

import imap_ops  # noqa: E402
import standins  # noqa: E402

FOLDERS = {"INBOX": "inbox", "Archive": "archive", "Trash": "trash"}
# The lane's invariant, as the report names it.
INVARIANT = "IMAP and the API one mailbox: nothing lost or doubled, flags and folders equal, sends in Sent"
# The agent's line for a round that did something (src/mailbox_sync/mod.rs).
ROUND = re.compile(r"mailbox-sync: (\d+) IMAP changes reported \((\d+) applied, \d+ waiting for their message\)"
                   r" in \d+ ms; (\d+) store changes applied to IMAP \((\d+) cleared\)")
NEEDS = ["postfix", "postmap", "postsrsd", "dovecot", "doveadm"]


def unavailable():
    """Why the lane cannot run here (None when it can): the mail host needs
    root and Debian's packages, as the mail host tests do."""
    if os.geteuid() != 0:
        return "not root"
    missing = [n for n in NEEDS if not shutil.which(n)]
    return f"missing {', '.join(missing)}" if missing else None


class MailHost:
    """scripts/mail-host on loopback, its sync agent behind `door`."""

    def __init__(self, binary, server, bucket, log):
        self.binary, self.server, self.bucket, self.log = binary, server, bucket, log
        # Dovecot and the pipe run as nobody: the directory must be passable.
        self.dir = tempfile.mkdtemp(prefix="mailhost-soak-imap-")
        os.chmod(self.dir, 0o755)
        with open(os.path.join(server.data_dir, "secrets", "sync-token")) as f:
            self.token = f.read().strip()
        self.door = standins.FaultProxy(server.port, "s3")
        self.imap_port = standins.free_port()
        self.sync_kills = self.dovecot_restarts = 0
        self.syncing = threading.Lock()

    def script(self, *args):
        out = subprocess.run([os.path.join(ROOT, "scripts/mail-host"), *args], capture_output=True, text=True,
                             env=dict(os.environ, MAILHOST_BIN=self.binary), stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            raise RuntimeError(f"scripts/mail-host {args[0]}: {out.stdout}{out.stderr}")
        return out.stdout

    def start(self):
        # No content filter: nothing reaches this host over SMTP (the soak's
        # inbound stream drops into the spool), and rspamd's two workers
        # would only take CPU from the run.
        self.script("start", self.dir, "--no-rspamd", "--url", self.door.url, "--sync-token", self.token,
                    "--mailhost", self.binary, "--bucket", self.bucket,
                    "--smtp-port", str(standins.free_port()), "--submission-port", str(standins.free_port()),
                    "--imap-port", str(self.imap_port))

    def sync(self):
        with self.syncing:  # one mta-sync at a time: it replaces files
            self.script("sync", self.dir)

    @property
    def cafile(self):
        return os.path.join(self.dir, "tls.pem")

    def kill_sync(self):
        """SIGKILL: the agent has no chance to finish a round or save."""
        with open(os.path.join(self.dir, "mailbox-sync.pid")) as f:
            pid = int(f.read().strip())
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.sync_kills += 1

    def start_sync(self):
        self.script("mailbox-sync-start", self.dir)

    def restart_dovecot(self):
        conf = os.path.join(self.dir, "dovecot.conf")
        subprocess.run(["doveadm", "-c", conf, "stop"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for _ in range(100):
            # No pipes: the daemon would hold them open.
            if subprocess.run(["dovecot", "-c", conf], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                self.dovecot_restarts += 1
                return
            time.sleep(0.1)
        raise RuntimeError("dovecot did not start again")

    def agent_counts(self):
        """What the agent's log says it did, summed over its rounds (a
        round that failed prints its error, not its counts)."""
        totals = {"IMAP changes reported": 0, "IMAP changes applied": 0, "store changes applied to IMAP": 0,
                  "store changes cleared": 0, "agent rounds failed": 0}
        try:
            lines = open(os.path.join(self.dir, "mailbox-sync.log"), errors="replace").read().splitlines()
        except OSError:
            return totals
        for line in lines:
            m = ROUND.match(line)
            if m:
                for key, value in zip(list(totals)[:4], m.groups()):
                    totals[key] += int(value)
            elif line.startswith("mailbox-sync: round failed"):
                totals["agent rounds failed"] += 1
        return totals

    def stop(self, keep):
        subprocess.run([os.path.join(ROOT, "scripts/mail-host"), "stop", self.dir], capture_output=True)
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def connect(host, user, password):
    c = imap_ops.Client("127.0.0.1", host.imap_port, timeout=20)
    c.starttls(ssl_context=ssl.create_default_context(cafile=host.cafile))
    c.login(user, password)
    return c


def credentials(client, host, account, log):
    """An app password for the account's mailbox, once Dovecot takes it."""
    record, answer = client.call("POST", "/issueMailboxCredential", account["key"], {"address": account["mailbox"]},
                                 route="onboard")
    if record["status"] != 200:
        raise RuntimeError(f"issueMailboxCredential: {record} {answer}")
    password = answer["password"]
    deadline = time.time() + 60
    while True:
        host.sync()
        try:
            connect(host, account["mailbox"], password).logout()
            return password
        except (imaplib.IMAP4.error, OSError) as e:
            if time.time() > deadline:
                raise RuntimeError(f"{account['mailbox']} never logged in over IMAP: {e}")
            time.sleep(1)


class App:
    """A person's mail app on one mailbox: one session, opened again
    whenever the server drops it (a Dovecot restart)."""

    def __init__(self, host, account, password, deadline, seed):
        self.host, self.account, self.password, self.deadline = host, account, password, deadline
        self.rng = random.Random(seed)
        self.c = None
        self.n = 0
        self.appended = {}  # Message-ID -> True once Dovecot answered OK
        self.expunged = set()
        # Expunges whose answer never came (the session dropped mid-command):
        # done or not, unknown, so on both sides or on neither.
        self.expunging = set()
        self.ops = {}
        self.dropped = 0  # sessions the server dropped
        self.refused = 0  # commands answered NO or BAD

    def run(self):
        while time.time() < self.deadline:
            action = self.rng.choices([self.append, self.flag, self.move, self.expunge], [3, 4, 3, 1])[0]
            try:
                if self.c is None:
                    self.c = connect(self.host, self.account["mailbox"], self.password)
                action()
                self.ops[action.__name__] = self.ops.get(action.__name__, 0) + 1
            except (imaplib.IMAP4.abort, OSError, ssl.SSLError):
                self.dropped += 1
                self.c = None
                time.sleep(0.5)
            except (imaplib.IMAP4.error, RuntimeError):
                self.refused += 1
            # A person's pace (a migration tool's flood is the backlog
            # test's, tests/api/mailbox_sync_faults.rs).
            time.sleep(self.rng.uniform(0.5, 1.5))
        if self.c is not None:
            try:
                self.c.logout()
            except (imaplib.IMAP4.error, OSError):
                pass

    def append(self):
        self.n += 1
        mid = f"<app-{self.account['i']}-{self.n}@old.soak.test>"
        raw = (f"From: Old Friend <friend@old.soak.test>\r\nTo: {self.account['mailbox']}\r\n"
               f"Subject: kept mail {self.account['i']}-{self.n}\r\nMessage-ID: {mid}\r\n"
               f"Date: Tue, 03 Mar 2020 09:00:00 +0000\r\n\r\nA message a migration tool carries over.\r\n")
        box = self.rng.choice(["INBOX", "INBOX", "Archive"])
        flags = self.rng.choice(["()", "(\\Seen)"])
        # Whether an append whose answer was lost happened is unknown: it
        # must then be on both sides or on neither.
        self.appended.setdefault(mid, False)
        imap_ops.check(self.c.append(imap_ops.quoted(box), flags, None, raw.encode()))
        self.appended[mid] = True

    def _pick(self, boxes):
        box = self.rng.choice(boxes)
        imap_ops.check(self.c.select(imap_ops.quoted(box)))
        uids = imap_ops.check(self.c.uid("SEARCH", "ALL"))[0].decode().split()
        return box, (self.rng.choice(uids) if uids else None)

    def flag(self):
        _, uid = self._pick(list(FOLDERS))
        if uid:
            imap_ops.check(self.c.uid("STORE", uid, self.rng.choice(["+FLAGS", "-FLAGS"]), "(\\Seen)"))

    def move(self):
        box, uid = self._pick(list(FOLDERS))
        if uid:
            to = self.rng.choice([b for b in FOLDERS if b != box])
            imap_ops.check(self.c.uid("MOVE", uid, imap_ops.quoted(to)))

    def expunge(self):
        _, uid = self._pick(["Trash"])
        if not uid:
            return
        data = imap_ops.check(self.c.uid("FETCH", uid, "(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"))
        header = next((p[1].decode(errors="replace") for p in data if isinstance(p, tuple)), "")
        mid = header.split(":", 1)[1].strip() if ":" in header else None
        imap_ops.check(self.c.uid("STORE", uid, "+FLAGS", "(\\Deleted)"))
        if mid:
            self.expunging.add(mid)
        imap_ops.check(self.c.uid("EXPUNGE", uid))
        if mid:
            self.expunging.discard(mid)
            self.expunged.add(mid)


class Lane:
    """The mail host, the apps, and the check at the end."""

    def __init__(self, binary, server, client, bucket, accounts, mailboxes, log):
        self.client, self.log = client, log
        self.host = MailHost(binary, server, bucket, log)
        self.accounts = accounts[:mailboxes]
        self.apps = []

    def start(self, deadline, seed):
        started = time.time()
        self.host.start()
        # From threads of their own, as onboarding: a keep-alive connection
        # of the main thread's would be stale by the check (the server is
        # killed meanwhile).
        with ThreadPoolExecutor(len(self.accounts) or 1) as pool:
            passwords = list(pool.map(lambda a: credentials(self.client, self.host, a, self.log), self.accounts))
        for n, (account, password) in enumerate(zip(self.accounts, passwords)):
            self.apps.append(App(self.host, account, password, deadline, seed + 1000 + n))
        self.log(f"IMAP lane: mail host up, {len(self.apps)} mailboxes logged in ({time.time() - started:.1f}s)")

    def threads(self):
        return [threading.Thread(target=app.run, daemon=True) for app in self.apps]

    def settle(self):
        """Faults off: the door open, the agent running, Dovecot up."""
        self.host.door.mode = "ok"
        if not os.path.exists(os.path.join(self.host.dir, "mailbox-sync.pid")):
            self.host.start_sync()

    def sides(self, app):
        """(API rows, IMAP copies) of the app's mail: (Message-ID, read, folder)."""
        import checks
        rows = checks.page_all(self.client, app.account["key"], {}, "messages")
        api = sorted((r["messageId"], not r["unread"], r["folder"]) for r in rows if r.get("messageId") in app.appended)
        c = connect(self.host, app.account["mailbox"], app.password)
        try:
            copies = []
            for box, folder in FOLDERS.items():
                for m in imap_ops.messages(c, box):
                    copies.append((m["messageId"], "\\Seen" in m["flags"], folder))
            sent = imap_ops.messages(c, "Sent")
        finally:
            c.logout()
        return api, sorted(copies), sent

    def check(self, sends):
        """[failures], details. Waits up to a minute for the two sides to agree."""
        failures, details = [], {"mailboxes": len(self.apps), "sync kills": self.host.sync_kills,
                                 "dovecot restarts": self.host.dovecot_restarts}
        began = time.time()
        pending = list(self.apps)
        last = {}
        while pending and time.time() - began < 60:
            for app in list(pending):
                try:
                    api, imap, sent = self.sides(app)
                except (imaplib.IMAP4.error, OSError, RuntimeError) as e:
                    last[app.account["i"]] = ("unreadable", str(e))
                    continue
                last[app.account["i"]] = (api, imap, sent)
                if api == imap:
                    pending.remove(app)
            if pending:
                time.sleep(1)
        details["in step after (s)"] = round(time.time() - began, 1)
        # What the lane did, so a reader sees it ran: the app's commands,
        # the changes each way as the agent counted them, the faults.
        for what in ("append", "flag", "move", "expunge"):
            details[f"app {what}s"] = sum(app.ops.get(what, 0) for app in self.apps)
        agent = self.host.agent_counts()
        details.update(agent)
        details["503s answered to the agent"] = self.host.door.counts.get("slowdown", 0)
        if not details["app appends"]:
            failures.append("the mail app appended nothing: the lane did not run")
        if not agent["IMAP changes applied"] or not agent["store changes applied to IMAP"]:
            failures.append(f"no change synced one of the ways: the lane did not run ({agent})")
        for app in self.apps:
            i, mailbox = app.account["i"], app.account["mailbox"]
            details[mailbox] = {"ops": app.ops, "appended": sum(app.appended.values()),
                                "expunged": len(app.expunged), "sessions dropped": app.dropped,
                                "commands refused": app.refused}
            state = last.get(i)
            if not state or state[0] == "unreadable":
                failures.append(f"{mailbox}: sides unreadable: {state}")
                continue
            api, imap, sent = state
            if api != imap:
                only_api = sorted(set(api) - set(imap))[:5]
                only_imap = sorted(set(imap) - set(api))[:5]
                failures.append(f"{mailbox}: the sides differ after 60s: API only {only_api}, IMAP only {only_imap}")
            ids = [m for m, _, _ in imap]
            doubled = sorted({m for m in ids if ids.count(m) > 1})
            if doubled:
                failures.append(f"{mailbox}: doubled in IMAP: {doubled[:5]}")
            api_ids = [m for m, _, _ in api]
            if len(set(api_ids)) != len(api_ids):
                failures.append(f"{mailbox}: doubled in the API")
            gone = app.expunged | app.expunging
            lost = sorted(m for m, sure in app.appended.items() if sure and m not in gone and m not in ids)
            if lost:
                failures.append(f"{mailbox}: {len(lost)} appended messages lost, e.g. {lost[:3]}")
            left = sorted(app.expunged & (set(ids) | set(api_ids)))
            if left:
                failures.append(f"{mailbox}: expunged over IMAP yet still there: {left[:3]}")
            sent_ids = [m["messageId"] for m in sent]
            if len(set(sent_ids)) != len(sent_ids):
                failures.append(f"{mailbox}: a send saved to Sent twice")
            answered = {a["messageId"] for s in sends if s["account"] == i for a in s["attempts"] if a["messageId"]}
            missing = sorted(answered - set(sent_ids))
            if missing:
                failures.append(f"{mailbox}: {len(missing)} sends that answered 200 are not in Sent, e.g. {missing[:3]}")
            details[mailbox].update({"in both": len(api), "sent copies": len(sent_ids), "sends answered 200":
                                     len(answered)})
        return failures, details

    def stop(self, keep):
        self.host.stop(keep)
