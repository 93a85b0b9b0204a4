"""How long a change takes to show through the other door (issue 42's
benchmark, driven by tests/api/mailbox_sync.rs): a read flag set through the
API until an IMAP session sees it, and set over IMAP until the API lists it;
and, in the same run, interleaved, the baseline: the same change seen
through the door that made it (the API listing its own change, a second
IMAP session seeing the first's), which is what the polling alone costs.

    python3 sync_latency.py API KEY IMAP_PORT CAFILE USER PASSWORD SAMPLES MESSAGE_ID...

Prints one JSON object: milliseconds per kind, each sample.
"""

import imaplib
import json
import random
import socket
import ssl
import sys
import time
import urllib.request

POLL = 0.01


class Client(imaplib.IMAP4):
    def _create_socket(self, timeout):
        return socket.create_connection((self.host, self.port), timeout, source_address=("127.0.0.2", 0))


def session(port, cafile, user, password):
    c = Client("127.0.0.1", port)
    c.starttls(ssl_context=ssl.create_default_context(cafile=cafile))
    c.login(user, password)
    c.select("INBOX")
    return c


def api(base, key, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={
        "Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def rows(base, key):
    found, cursor = {}, ""
    while True:
        page = api(base, key, "GET", "/inbox?limit=50" + cursor)
        for m in page["messages"]:
            found[m["messageId"]] = m
        if not page.get("nextCursor"):
            return found
        cursor = "&cursor=" + page["nextCursor"]


def uid_of(c, message_id):
    typ, data = c.uid("SEARCH", "HEADER", "Message-ID", message_id)
    return data[0].decode().split()[0]


def seen_in(c, uid):
    c.noop()
    typ, data = c.uid("FETCH", uid, "(FLAGS)")
    return b"\\Seen" in data[0]


def until(check):
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > 30:
            raise TimeoutError("not within 30 s")
        time.sleep(POLL)
    return (time.monotonic() - started) * 1000


def main():
    base, key, port, cafile, user, password, samples = sys.argv[1:8]
    message_ids = sys.argv[8:]
    port, samples = int(port), int(samples)
    app = session(port, cafile, user, password)
    watcher = session(port, cafile, user, password)
    state = {mid: rows(base, key)[mid]["unread"] for mid in message_ids}
    ids = {mid: rows(base, key)[mid]["id"] for mid in message_ids}
    uids = {mid: uid_of(app, mid) for mid in message_ids}
    result = {"api_to_imap": [], "imap_to_api": [], "api_baseline": [], "imap_baseline": []}
    for i in range(samples):
        for kind in random.sample(list(result), len(result)):
            mid = random.choice(message_ids)
            unread = not state[mid]
            state[mid] = unread
            if kind in ("api_to_imap", "api_baseline"):
                api(base, key, "POST", "/inbox", {"id": ids[mid], "unread": unread})
                if kind == "api_to_imap":
                    ms = until(lambda: seen_in(watcher, uids[mid]) == (not unread))
                else:
                    ms = until(lambda: rows(base, key)[mid]["unread"] == unread)
            else:
                flag = "-FLAGS" if unread else "+FLAGS"
                # A mail app in IDLE has seen the other door's last change
                # (a stale session's store is mailbox_sync's recheck case).
                app.noop()
                app.uid("STORE", uids[mid], flag, "(\\Seen)")
                if kind == "imap_to_api":
                    ms = until(lambda: rows(base, key)[mid]["unread"] == unread)
                else:
                    ms = until(lambda: seen_in(watcher, uids[mid]) == (not unread))
            result[kind].append(round(ms, 1))
            # Both doors in step before the next sample.
            until(lambda: rows(base, key)[mid]["unread"] == unread and seen_in(watcher, uids[mid]) == (not unread))
    app.logout()
    watcher.logout()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
