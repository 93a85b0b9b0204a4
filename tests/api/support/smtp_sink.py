#!/usr/bin/env python3
"""A real SMTP submission server for the end-to-end tests (tests/api/support/smtp.rs).

Listens on 127.0.0.1:PORT with aiosmtpd. STARTTLS is required before anything but
EHLO/NOOP/QUIT, AUTH (PLAIN or LOGIN) is required before MAIL and only over TLS, and
exactly one username/password pair is accepted (anything else gets 535). Each accepted
message is written to OUT_DIR as NNNNNN.json (a per-process sequence number, so
sorting the names gives arrival order), atomically (written as .tmp, then renamed):

    {"mail_from": str, "rcpt_tos": [str], "auth_user": str | null, "tls": bool,
     "raw": str}

"mail_from" is "" for the null reverse-path (MAIL FROM:<>).
"raw" is the message exactly as received after the DATA dot-unstuffing (CRLF line
ends as the client sent them), decoded as latin-1: every byte 0x00-0xFF is the
code point of the same value, so `bytes(ord(c) for c in raw)` (in Rust: each char
as u8) gives back the original bytes losslessly.

With --reject every DATA is answered 554 and nothing is written: the client's
"SMTP failed" path. Without it, a message whose every recipient's local part
begins with "refuse" is answered so as well (a relay refusing one send whole).

Prints "READY" on stdout once listening, then serves until killed, or until its
stdin reaches end of file (the parent test process went away without killing it).

usage: smtp_sink.py --port P --cert server.pem --key server.key \
                    --user U --password PW --out DIR [--reject] [--open]
"""

import argparse
import json
import os
import ssl
import sys
import threading
import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    def __init__(self, out_dir, reject):
        self.out_dir = out_dir
        self.reject = reject
        self.seq = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        if self.reject:
            return "554 5.7.1 Message refused by the test sink (--reject)"
        if all(to.startswith("refuse") for to in envelope.rcpt_tos):
            return "554 5.7.1 Message refused by the test sink (a refuse... recipient)"
        record = {
            # aiosmtpd reports the null reverse-path as "<>"; "" here.
            "mail_from": "" if envelope.mail_from == "<>" else envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "auth_user": session.auth_data if session.authenticated else None,
            "tls": session.ssl is not None,
            # The client's address and port: one per connection.
            "peer": "%s:%s" % tuple(session.peer[:2]),
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


def authenticator(user, password):
    def check(server, session, envelope, mechanism, auth_data):
        if mechanism not in ("PLAIN", "LOGIN") or not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = auth_data.login.decode("utf-8", "replace")
        given = auth_data.password.decode("utf-8", "replace")
        if login == user and given == password:
            return AuthResult(success=True, auth_data=login)
        return AuthResult(success=False, handled=False)

    return check


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True, help="server certificate chain (PEM)")
    parser.add_argument("--key", required=True, help="server private key (PEM)")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--out", required=True, help="directory the accepted messages are written to")
    parser.add_argument("--reject", action="store_true", help="answer 554 to every DATA")
    parser.add_argument("--open", action="store_true", help="receive as an MX: no AUTH, STARTTLS optional")
    args = parser.parse_args()
    # aiosmtpd 1.4 warns about its own use of Session.login_data on every AUTH.
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(args.cert, args.key)

    controller = Controller(
        Sink(args.out, args.reject),
        hostname="127.0.0.1",
        port=args.port,
        # The greeting name; also spares aiosmtpd a socket.getfqdn() lookup.
        server_hostname="smtp-sink.test",
        tls_context=tls,
        require_starttls=not args.open,
        auth_require_tls=True,
        auth_required=not args.open,
        auth_exclude_mechanism=["CRAM-MD5"],
        authenticator=authenticator(args.user, args.password),
    )
    controller.start()
    print("READY", flush=True)
    # Serve until killed, or until the parent closes our stdin by going away.
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
