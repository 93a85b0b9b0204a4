"""A person's mail app, played with Python's imaplib against the mail host's
Dovecot (tests/api/mailbox_sync.rs): reads a list of operations as JSON on
stdin, runs them in one IMAP session (STARTTLS, then LOGIN), and prints one
JSON answer per operation.

    python3 imap_ops.py PORT CAFILE USER PASSWORD < ops.json

Operations ({"op": ...}): list, lsub, messages {box} (uid, flags,
messageId, subject of each), store {box, messageId, flags: "+FLAGS (\\Seen)"},
store_all {box, flags} (every message of the folder at once), store_ids
{box, messageIds, flags} and move_ids {box, messageIds, to} (the messages
selected together: one command per few hundred UIDs), move {box,
messageId, to}, move_by_append {box, messageId, to, pauseMs} (expunged here,
then appended there), expunge {box, messageId} (\\Deleted, then UID EXPUNGE), append
{box, flags, raw}, create {name} (a folder, its name in UTF-8); and for a
session that does not look again: select {box}, uid_of {messageId}, wait_file
{path} (until the test makes it), store_uid {flags, uid (default: the last uid_of's)}.
"""

import imaplib
import json
import re
import socket
import ssl
import sys


class Client(imaplib.IMAP4):
    # From 127.0.0.2: Dovecot counts a connection whose two ends are one
    # address as secured, which a client elsewhere never is.
    def _create_socket(self, timeout):
        return socket.create_connection((self.host, self.port), timeout, source_address=("127.0.0.2", 0))


def utf7(name):
    """RFC 3501's modified UTF-7 for a folder name."""
    out, run = [], []

    def flush():
        if run:
            b = "".join(run).encode("utf-16-be")
            import base64

            out.append("&" + base64.b64encode(b).decode().rstrip("=").replace("/", ",") + "-")
            run.clear()

    for ch in name:
        if 0x20 <= ord(ch) <= 0x7E:
            flush()
            out.append("&-" if ch == "&" else ch)
        else:
            run.append(ch)
    flush()
    return "".join(out)


def quoted(name):
    return '"' + utf7(name).replace("\\", "\\\\").replace('"', '\\"') + '"'


def check(answer):
    typ, data = answer
    if typ != "OK":
        raise RuntimeError(f"{typ} {data}")
    return data


def still_there(answer):
    """Whether a command found its message: another session (the sync
    agent applying the API's move) may expunge it between the SEARCH and
    the command, and Dovecot then answers NO [EXPUNGEISSUED], as a mail app
    sees it; any other refusal is an error."""
    typ, data = answer
    if typ == "NO" and b"EXPUNGEISSUED" in b" ".join(d for d in data if isinstance(d, bytes)):
        return False
    check(answer)
    return True


def uids_of(c, box, message_id):
    check(c.select(quoted(box)))
    data = check(c.uid("SEARCH", "HEADER", "Message-ID", message_id))
    return data[0].decode().split()


def uids_by_id(c, box):
    """Each Message-ID of a folder with its UIDs, from one FETCH."""
    check(c.select(quoted(box)))
    data = check(c.uid("FETCH", "1:*", "(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"))
    found = {}
    for part in data:
        if not isinstance(part, tuple):
            continue
        uid = re.search(r"UID (\d+)", part[0].decode()).group(1)
        mid = re.search(r"(?im)^message-id:\s*(\S+)", part[1].decode(errors="replace"))
        if mid:
            found.setdefault(mid.group(1), []).append(uid)
    return found


def uid_sets(c, box, message_ids):
    """The UIDs of these Message-IDs in sets of 500 (a command line each)."""
    found = uids_by_id(c, box)
    uids = [uid for mid in message_ids for uid in found.get(mid, [])]
    return [",".join(uids[i : i + 500]) for i in range(0, len(uids), 500)]


def messages(c, box):
    check(c.select(quoted(box), readonly=True))
    data = check(c.uid("SEARCH", "ALL"))
    uids = data[0].decode().split()
    found = []
    if not uids:
        return found
    data = check(c.uid("FETCH", ",".join(uids), "(UID FLAGS BODY.PEEK[HEADER.FIELDS (MESSAGE-ID SUBJECT BCC)])"))
    for part in data:
        if not isinstance(part, tuple):
            continue
        meta = part[0].decode()
        header = part[1].decode(errors="replace")
        uid = int(re.search(r"UID (\d+)", meta).group(1))
        flags = re.search(r"FLAGS \(([^)]*)\)", meta).group(1).split()
        mid = re.search(r"(?im)^message-id:\s*(\S+)", header)
        subject = re.search(r"(?im)^subject:\s*(.*)$", header)
        found.append({
            "uid": uid,
            "flags": flags,
            "messageId": mid.group(1) if mid else None,
            "subject": subject.group(1).strip() if subject else None,
            "bcc": bool(re.search(r"(?im)^bcc:", header)),
        })
    return found


def run(c, op, seen):
    kind = op["op"]
    if kind in ("list", "lsub"):
        data = check(c.list() if kind == "list" else c.lsub())
        return [d.decode() for d in data if d]
    if kind == "messages":
        return messages(c, op["box"])
    if kind == "store":
        uids = uids_of(c, op["box"], op["messageId"])
        return sum(still_there(c.uid("STORE", uid, *op["flags"].split(" ", 1))) for uid in uids)
    if kind == "store_all":
        check(c.select(quoted(op["box"])))
        check(c.store("1:*", *op["flags"].split(" ", 1)))
        return True
    if kind == "store_ids":
        sets = uid_sets(c, op["box"], op["messageIds"])
        for uids in sets:
            check(c.uid("STORE", uids, *op["flags"].split(" ", 1)))
        return sum(len(s.split(",")) for s in sets)
    if kind == "move_ids":
        sets = uid_sets(c, op["box"], op["messageIds"])
        for uids in sets:
            check(c.uid("MOVE", uids, quoted(op["to"])))
        return sum(len(s.split(",")) for s in sets)
    if kind == "move":
        uids = uids_of(c, op["box"], op["messageId"])
        return sum(still_there(c.uid("MOVE", uid, quoted(op["to"]))) for uid in uids)
    if kind == "expunge":
        uids = uids_of(c, op["box"], op["messageId"])
        for uid in uids:
            check(c.uid("STORE", uid, "+FLAGS", "(\\Deleted)"))
            check(c.uid("EXPUNGE", uid))
        return len(uids)
    if kind == "move_by_append":
        # A move as mbsync makes one: the message expunged in one folder's
        # pass, then appended in another's, `pauseMs` later.
        import time

        uids = uids_of(c, op["box"], op["messageId"])
        data = check(c.uid("FETCH", uids[0], "(FLAGS BODY.PEEK[])"))
        flags = [f.decode() for f in imaplib.ParseFlags(data[0][0]) if f != b"\\Recent"]
        raw = data[0][1]
        check(c.uid("STORE", uids[0], "+FLAGS", "(\\Deleted)"))
        check(c.uid("EXPUNGE", uids[0]))
        time.sleep(op.get("pauseMs", 0) / 1000)
        check(c.append(quoted(op["to"]), "(" + " ".join(flags) + ")", None, raw))
        return uids[0]
    if kind == "append":
        data = check(c.append(quoted(op["box"]), op.get("flags", "()"), None, op["raw"].encode()))
        return data[0].decode() if data and data[0] else ""
    # A session that does not look again: select, find a UID, wait, then
    # store on what it saw (a stale view).
    if kind == "select":
        check(c.select(quoted(op["box"])))
        return True
    if kind == "uid_of":
        data = check(c.uid("SEARCH", "HEADER", "Message-ID", op["messageId"]))
        seen["uid"] = int(data[0].decode().split()[0])
        return seen["uid"]
    if kind == "wait_file":
        import os
        import time

        started = time.monotonic()
        while not os.path.exists(op["path"]):
            if time.monotonic() - started > 60:
                raise TimeoutError(op["path"])
            time.sleep(0.05)
        return True
    if kind == "store_uid":
        check(c.uid("STORE", str(op.get("uid", seen.get("uid"))), *op["flags"].split(" ", 1)))
        return True
    if kind == "expunge_uid":
        check(c.uid("EXPUNGE", str(op.get("uid", seen.get("uid")))))
        return True
    if kind == "create":
        check(c.create(quoted(op["name"])))
        return True
    raise ValueError(kind)


def main():
    port, cafile, user, password = sys.argv[1:5]
    ops = json.load(sys.stdin)
    c = Client("127.0.0.1", int(port))
    c.starttls(ssl_context=ssl.create_default_context(cafile=cafile))
    c.login(user, password)
    answers, seen = [], {}
    for op in ops:
        try:
            answers.append({"ok": run(c, op, seen)})
        except Exception as e:  # the test reads what the server answered
            answers.append({"error": str(e)})
    c.logout()
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
