#!/usr/bin/env python3
"""Verifies the DKIM signature of a raw RFC 5322 message with dkimpy.

The public key is looked up as a TXT record with dnspython, over UDP, at exactly the
nameserver given (the tests' TestDns), never at the system's resolvers.

usage: dkim_verify.py MESSAGE_FILE --nameserver 127.0.0.1:PORT

Verifies the topmost DKIM-Signature (dkim.verify). Prints one line, "dkim=pass ..."
or "dkim=fail ...", with dkimpy's debug log on stderr, and exits 0 when the
signature is valid, 1 when it is not (or the message has none, or the key cannot
be found), 2 on a usage error.
"""

import argparse
import logging
import re
import sys

import dkim
import dns.exception
import dns.rdatatype
import dns.resolver


def make_dnsfunc(host, port):
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers = [host]
    resolver.port = port
    resolver.cache = None

    def get_txt(name, timeout=5):
        if isinstance(name, bytes):
            name = name.decode("ascii")
        try:
            answer = resolver.resolve(
                name, dns.rdatatype.TXT, tcp=False, lifetime=timeout, raise_on_no_answer=False, search=False
            )
        except (dns.resolver.NXDOMAIN, dns.resolver.NoNameservers):
            return None
        except dns.exception.Timeout as e:
            raise dkim.DnsTimeoutError("DNS timeout asking %s:%d for %s: %s" % (host, port, name, e))
        for rrset in answer.response.answer:
            if rrset.rdtype == dns.rdatatype.TXT:
                for record in rrset:
                    text = b"".join(record.strings)
                    # The DKIM key record among any others at the name.
                    if text.startswith(b"v=DKIM1") or b"p=" in text:
                        return text
        return None

    return get_txt


def tag(signature_header, name):
    m = re.search(rb"(?:^|;)\s*" + name + rb"\s*=\s*([^;]*)", signature_header)
    return m.group(1).strip().decode("ascii", "replace") if m else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("message", help="file holding the raw message")
    parser.add_argument("--nameserver", required=True, help="IPv4:PORT of the DNS server to ask")
    args = parser.parse_args()
    host, _, port = args.nameserver.rpartition(":")
    if not host or not port.isdigit():
        parser.error("--nameserver must be IPv4:PORT")

    with open(args.message, "rb") as f:
        message = f.read()

    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG, format="dkimpy: %(message)s")
    logger = logging.getLogger("dkim_verify")

    m = re.search(rb"^DKIM-Signature:(.*(?:\r?\n[ \t].*)*)", message, re.MULTILINE | re.IGNORECASE)
    if m is None:
        print("dkim=none (the message has no DKIM-Signature header)")
        return 1
    header = re.sub(rb"\r?\n[ \t]", b" ", m.group(1))
    where = "d=%s s=%s a=%s c=%s" % (tag(header, b"d"), tag(header, b"s"), tag(header, b"a"), tag(header, b"c"))

    try:
        ok = dkim.verify(message, logger=logger, dnsfunc=make_dnsfunc(host, int(port)))
    except dkim.DKIMException as e:
        print("dkim=fail %s (%s)" % (where, e))
        return 1
    print("dkim=%s %s" % ("pass" if ok else "fail", where))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
