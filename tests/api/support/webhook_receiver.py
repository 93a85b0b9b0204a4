"""An HTTPS webhook receiver for tests: records every POST and checks its
signatures with code no one in this project wrote.

usage: webhook_receiver.py --port P --cert server.pem --key server.key \
           --secret whsec_... --out deliveries.jsonl [--statuses 500,200]

Each POST is answered with the next status of --statuses (the last one
repeats; default 200; 0 closes the connection without an answer) and
appended to --out as one JSON line: the headers,
the body, the status given, and whether the signatures verified: the Standard
Webhooks one with the `standardwebhooks` library from PyPI, and the X-SVC one
(`sha256=` + hex HMAC-SHA256 of "<X-SVC-Timestamp>.<body>" keyed with the
secret) with Python's hmac module.
"""

import argparse
import os
import sys
import hashlib
import hmac
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--statuses", default="200")
    args = parser.parse_args()
    statuses = [int(s) for s in args.statuses.split(",")]
    lock = threading.Lock()
    count = [0]
    standard = Webhook(args.secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                standard.verify(body, headers)
                standard_ok = True
            except Exception as e:  # noqa: BLE001 - the reason is recorded
                standard_ok = f"{type(e).__name__}: {e}"
            expected = "sha256=" + hmac.new(
                args.secret.encode(), f"{headers.get('x-svc-timestamp', '')}.".encode() + body, hashlib.sha256
            ).hexdigest()
            svc_ok = hmac.compare_digest(expected, headers.get("x-svc-signature", ""))
            with lock:
                status = statuses[min(count[0], len(statuses) - 1)]
                count[0] += 1
                with open(args.out, "a") as out:
                    out.write(json.dumps({
                        "path": self.path, "headers": headers, "body": body.decode(), "status": status,
                        "standardOk": standard_ok, "svcOk": svc_ok,
                    }) + "\n")
            if status == 0:
                # Read and recorded, then the connection closed unanswered.
                self.close_connection = True
                return
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(args.cert, args.key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    # The test holds stdin open: at its end (the test is gone) the receiver goes too.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
