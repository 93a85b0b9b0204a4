#!/usr/bin/env python3
"""A remote site's MX on loopback, for the delivery-status end-to-end test.

The mail host relays `*@remote.test` here (scripts/mail-host --route
remote.test=127.0.0.1:PORT), and this server answers each RCPT by the
recipient's local part, as a real remote site would:

    bounce-me@...   550 5.1.1 User unknown                  (Postfix: status=bounced)
    defer-me@...    450 4.2.0 Try again later, the first time for this
                    recipient and this message; 250 on every later try
                    (Postfix: status=deferred, then status=sent)
    anything else   250 (deliver-me@... is the one the test names)

"This message" is the envelope sender: the service gives each recipient's
transaction its own VERP return path, and Postfix retries with the same one,
so (MAIL FROM, RCPT TO), both lower-cased, names one recipient's copy of one
message.

Plain SMTP, no AUTH, STARTTLS not offered (Postfix's smtp client then sends in
clear, as `smtp_tls_security_level = may` allows). Two records, in OUT_DIR:

  - each accepted message as NNNNNN.json (a per-process sequence number, so
    sorting the names gives arrival order), written as .tmp and renamed:
        {"mail_from": str, "rcpt_tos": [str], "raw": str}
    "mail_from" is "" for the null reverse-path; "raw" is the message as
    received, decoded as latin-1 (lossless: each char is one byte);
  - every RCPT answer, one JSON line each, appended to rcpts.jsonl:
        {"mail_from": str, "rcpt": str, "code": int, "reply": str}

Prints "READY" on stdout once listening, then serves until killed, or until its
stdin reaches end of file (the parent test process went away without killing it).

usage: remote_mx.py --port P --out DIR
"""

import argparse
import json
import os
import sys
import threading
import warnings

from aiosmtpd.controller import Controller

BOUNCE = "550 5.1.1 User unknown"
DEFER = "450 4.2.0 Try again later"
ACCEPT = "250 2.1.5 Recipient ok"


class RemoteMx:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.seq = 0
        # (mail_from, rcpt) pairs already deferred once.
        self.deferred = set()
        self.lock = threading.Lock()

    def answer(self, mail_from, rcpt):
        local = rcpt.rsplit("@", 1)[0].lower()
        if local == "bounce-me":
            return BOUNCE
        if local == "defer-me":
            key = (mail_from.lower(), rcpt.lower())
            with self.lock:
                if key not in self.deferred:
                    self.deferred.add(key)
                    return DEFER
        return ACCEPT

    def record(self, entry):
        with self.lock:
            with open(os.path.join(self.out_dir, "rcpts.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        mail_from = "" if envelope.mail_from == "<>" else (envelope.mail_from or "")
        reply = self.answer(mail_from, address)
        self.record({"mail_from": mail_from, "rcpt": address, "code": int(reply[:3]), "reply": reply})
        if reply.startswith("250"):
            envelope.rcpt_tos.append(address)
        return reply

    async def handle_DATA(self, server, session, envelope):
        record = {
            "mail_from": "" if envelope.mail_from == "<>" else envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "raw": envelope.original_content.decode("latin-1"),
        }
        with self.lock:
            self.seq += 1
            name = "%06d.json" % self.seq
        tmp = os.path.join(self.out_dir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.out_dir, name))
        return "250 2.0.0 Message accepted for delivery"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True, help="directory the accepted messages and RCPT answers go to")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    os.makedirs(args.out, exist_ok=True)

    controller = Controller(
        RemoteMx(args.out),
        hostname="127.0.0.1",
        port=args.port,
        # The greeting name; also spares aiosmtpd a socket.getfqdn() lookup.
        server_hostname="mx.remote.test",
    )
    controller.start()
    print("READY", flush=True)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
