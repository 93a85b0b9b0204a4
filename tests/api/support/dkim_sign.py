#!/usr/bin/env python3
"""Signs a raw RFC 5322 message with dkimpy, a DKIM signer no one here wrote, with a
fresh 2048-bit RSA key made by openssl.

usage: dkim_sign.py MESSAGE_FILE DOMAIN SELECTOR [--arc]

With --arc, seals the message with an ARC set instead (dkimpy's arc_sign), as
a forwarder DOMAIN would: its ARC-Authentication-Results copies the message's
own `Authentication-Results: DOMAIN; ...` header.

Prints one JSON line: {"record": the TXT value to publish at
SELECTOR._domainkey.DOMAIN, "signed": the signed message, base64}.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile

import dkim


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[4:] not in ([], ["--arc"]):
        print(__doc__, file=sys.stderr)
        return 2
    message = open(sys.argv[1], "rb").read()
    domain, selector = sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as d:
        key = os.path.join(d, "key.pem")
        subprocess.run(["openssl", "genrsa", "-traditional", "-out", key, "2048"], check=True, capture_output=True)
        public = subprocess.run(
            ["openssl", "rsa", "-in", key, "-pubout", "-outform", "DER"], check=True, capture_output=True
        ).stdout
        pem = open(key, "rb").read()
    if sys.argv[4:] == ["--arc"]:
        signature = b"".join(
            dkim.arc_sign(
                message,
                selector.encode(),
                domain.encode(),
                pem,
                domain.encode(),
                include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
            )
        )
    else:
        signature = dkim.sign(
            message,
            selector.encode(),
            domain.encode(),
            pem,
            include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
        )
    print(
        json.dumps(
            {
                "record": "v=DKIM1; k=rsa; p=" + base64.b64encode(public).decode(),
                "signed": base64.b64encode(signature + message).decode(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
