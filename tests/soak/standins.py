"""The soak's stand-ins, each able to fail on command: an authoritative DNS
server, the SMTP relay, the HTTPS webhook receiver, and an HTTP fault proxy
put in front of DynamoDB Local and moto.

Every stand-in keeps its own counts; the faults it is told to play come from
the schedule in faults.py, which flips `mode` on the stand-in.
"""

import asyncio
import email
import email.policy
import http.client
import json
import multiprocessing
import os
import random
import socket
import socketserver
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from aiosmtpd.controller import Controller

import capacity


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def quiet(*_):
    """A peer that went away mid-answer is part of the soak, not news."""


def wait_port(port, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not start on port {port}")


# ---------------------------------------------------------------- DNS


class Dns:
    """MX and TXT answers from a map the harness fills (UDP and TCP on one port)."""

    def __init__(self):
        self.records = {}  # (name, type) -> [rdata text]
        self.lock = threading.Lock()
        self.port = free_port()
        handler = self._answer

        class Udp(socketserver.BaseRequestHandler):
            def handle(self):
                data, sock = self.request
                sock.sendto(handler(data), self.client_address)

        class Tcp(socketserver.BaseRequestHandler):
            def handle(self):
                size = int.from_bytes(self.request.recv(2), "big")
                data = b""
                while len(data) < size:
                    chunk = self.request.recv(size - len(data))
                    if not chunk:
                        return
                    data += chunk
                out = handler(data)
                self.request.sendall(len(out).to_bytes(2, "big") + out)

        self.udp = socketserver.ThreadingUDPServer(("127.0.0.1", self.port), Udp)
        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Tcp)
        for server in (self.udp, self.tcp):
            server.daemon_threads = True
            server.handle_error = quiet
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def set(self, name, rtype, values):
        with self.lock:
            self.records[(name.lower().rstrip("."), rtype)] = list(values)

    def _answer(self, data):
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text().lower().rstrip(".")
        rtype = dns.rdatatype.to_text(question.rdtype)
        with self.lock:
            values = self.records.get((name, rtype), [])
            known = any(n == name for n, _ in self.records)
        if values:
            rrset = dns.rrset.from_text_list(question.name, 300, "IN", rtype, values)
            response.answer.append(rrset)
        elif not known:
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response.to_wire()

    def publish(self, domain_view):
        """Every required record of an addDomain answer's dnsInstructions."""
        txt = {}
        for record in domain_view["dnsInstructions"]["records"]:
            if record.get("optional"):
                continue
            host, value = record["host"], record["value"]
            if record["type"] == "MX":
                self.set(host, "MX", [f"{record['priority']} {value.rstrip('.')}."])
            elif record["type"] == "TXT":
                txt.setdefault(host, []).append(value)
        for host, values in txt.items():
            self.set(host, "TXT", [txt_rdata(v) for v in values])


def txt_rdata(value):
    """A TXT record's text form: character-strings of at most 255 bytes."""
    chunks = [value[i:i + 255] for i in range(0, len(value), 255)] or [""]
    return " ".join('"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in chunks)


# ---------------------------------------------------------------- SMTP relay


class Relay:
    """An open SMTP relay (no TLS, no AUTH) that records every message it
    received, and fails on command: mode "421" or "451" answers DATA so
    (nothing kept), "drop" keeps the message and closes the connection
    before answering (the client cannot know it went out), "hang" waits
    `hang_seconds` before answering."""

    def __init__(self, hang_seconds=40):
        self.mode = "ok"
        self.hang_seconds = hang_seconds
        self.received = []  # dicts: message_id, subject, rcpt, outcome
        self.lock = threading.Lock()
        self.port = free_port()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port, server_hostname="relay.soak.test")
        self.controller.start()

    def _keep(self, envelope, outcome):
        msg = email.message_from_bytes(envelope.original_content, policy=email.policy.compat32)
        with self.lock:
            self.received.append({
                "message_id": (msg.get("Message-ID") or "").strip().strip("<>"),
                "subject": str(msg.get("Subject") or ""),
                "rcpt": list(envelope.rcpt_tos),
                "outcome": outcome,
                "at": time.time(),
            })

    async def handle_DATA(self, server, session, envelope):
        mode = self.mode
        if mode in ("421", "451"):
            return f"{mode} 4.3.0 soak relay: try again later"
        if mode == "drop":
            self._keep(envelope, "dropped")
            server.transport.abort()
            return "250 2.0.0 never read"
        if mode == "hang":
            await asyncio.sleep(self.hang_seconds)
        self._keep(envelope, "accepted")
        return "250 2.0.0 accepted"

    def stop(self):
        self.controller.stop()


# ---------------------------------------------------------------- webhooks


def make_certs(directory):
    """A CA and a leaf for 127.0.0.1 (rustls refuses a CA as the end entity)."""
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    key, csr, cert = (os.path.join(directory, n) for n in ("leaf.key", "leaf.csr", "leaf.pem"))
    ext = os.path.join(directory, "leaf.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
        "-days", "2", "-subj", "/CN=soak test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", ext)
    return ca, cert, key


class Webhooks:
    """An HTTPS receiver counting POSTs; mode "500" answers 500, "slow"
    holds the answer past the sender's timeout."""

    def __init__(self, cert, key, slow_seconds=15):
        self.mode = "ok"
        self.slow_seconds = slow_seconds
        self.posts = []
        self.lock = threading.Lock()
        self.port = free_port()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                mode = owner.mode
                with owner.lock:
                    owner.posts.append({"at": time.time(), "mode": mode, "id": self.headers.get("webhook-id"),
                                        "bytes": len(body)})
                if mode == "slow":
                    time.sleep(owner.slow_seconds)
                status = 500 if mode == "500" else 200
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = quiet
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert, key)
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# ---------------------------------------------------------------- fault proxy


DYNAMO_FAULTS = {
    "throughput": (400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                   "The level of configured provisioned throughput for the table was exceeded."),
    "throttling": (400, "com.amazon.coral.availability#ThrottlingException", "Rate of requests exceeds the allowed throughput."),
    "500": (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"),
}


class FaultProxy:
    """An HTTP/1.1 proxy in front of DynamoDB Local or moto. While `mode`
    names a fault, a share `rate` of the requests get it instead of the
    upstream's answer: DynamoDB's throttling and 500 bodies (the __type the
    SDK reads), S3's 503 SlowDown, or `latency` seconds added.

    It runs in a process of its own: in the soak's process every call it
    forwards would wait for the interpreter lock behind the agents' threads
    (50 of them, and the other stand-ins), which added that wait to every
    storage request the server made. `mode`, `rate` and `latency` are shared
    memory the fault player sets; `counts` asks the process (calls passed and
    faults played, and the passed calls by operation: DynamoDB's
    X-Amz-Target, S3's method)."""

    MODES = ["ok", "mixed", "latency", "throughput", "throttling", "500", "slowdown"]

    def __init__(self, upstream_port, flavor):
        self.flavor = flavor  # "dynamodb" or "s3"
        self.port = free_port()
        mp = multiprocessing.get_context("spawn")
        self._mode, self._rate, self._latency = mp.Value("i", 0), mp.Value("d", 0.0), mp.Value("d", 0.0)
        # While set (the storage count, one request at a time), a transaction's
        # write units are computed from its items' sizes (capacity.py).
        self._metering = mp.Value("i", 0)
        self._control, child = mp.Pipe()
        self._lock = threading.Lock()
        self.process = mp.Process(target=_serve_proxy, daemon=True, name=f"{flavor}-proxy",
                                  args=(upstream_port, flavor, self.port, self._mode, self._rate, self._latency, self._metering,
                                        child))
        self.process.start()
        wait_port(self.port, f"the {flavor} fault proxy", 30)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def mode(self):
        return self.MODES[self._mode.value]

    @mode.setter
    def mode(self, value):
        self._mode.value = self.MODES.index(value)

    @property
    def rate(self):
        return self._rate.value

    @rate.setter
    def rate(self, value):
        self._rate.value = value

    @property
    def latency(self):
        return self._latency.value

    @latency.setter
    def latency(self, value):
        self._latency.value = value

    @property
    def metering(self):
        return bool(self._metering.value)

    @metering.setter
    def metering(self, value):
        self._metering.value = int(bool(value))

    @property
    def counts(self):
        """Calls passed and faults played (what the report shows)."""
        return {k: v for k, v in self.all_counts().items() if not k.startswith(("op ", "item ")) and k not in ("wu", "ru")}

    def units(self):
        """DynamoDB's consumed capacity, as it answered: {"wu": write units,
        "ru": read units}."""
        counts = self.all_counts()
        return {k: counts.get(k, 0) for k in ("wu", "ru")}

    def operations(self):
        """Calls passed to the upstream, by operation."""
        return {k[3:]: v for k, v in self.all_counts().items() if k.startswith("op ")}

    def items(self):
        """DynamoDB calls passed to the upstream, by operation and the kinds
        of item they name."""
        return {k[5:]: v for k, v in self.all_counts().items() if k.startswith("item ")}

    def all_counts(self):
        with self._lock:
            self._control.send("counts")
            return self._control.recv()

    def cpu_seconds(self):
        """CPU time the proxy's process has used (user + system)."""
        return process_cpu_seconds(self.process.pid)


def partitions(body):
    """The kinds of item a DynamoDB request names: each partition key's prefix
    (`KEY`, `ACCT`, `MAIL`...), sorted, from its Key, Item or Keys, or a
    Query's key value."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return ["?"]
    found = []

    def walk(value):
        if isinstance(value, dict):
            pk = value.get("pk")
            if isinstance(pk, dict) and isinstance(pk.get("S"), str):
                found.append(pk["S"].split("#", 1)[0])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk({k: v for k, v in request.items() if k != "ExpressionAttributeValues"})
    if not found:
        for v in (request.get("ExpressionAttributeValues") or {}).values():
            if isinstance(v, dict) and "#" in str(v.get("S", "")):
                found.append(v["S"].split("#", 1)[0])
                break
    return sorted(found)


def process_cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _serve_proxy(upstream_port, flavor, port, mode, rate, latency, metering, control):
    """The proxy's process: serves until the soak ends (it is a daemon)."""
    counts = {}
    lock = threading.Lock()
    local = threading.local()

    def count(what, amount=1):
        with lock:
            counts[what] = counts.get(what, 0) + amount

    def pick():
        name = FaultProxy.MODES[mode.value]
        if name == "ok" or random.random() >= rate.value:
            count("passed")
            return None
        if name == "mixed":
            name = random.choice(["throughput", "throttling", "500", "latency"] if flavor == "dynamodb"
                                 else ["slowdown", "500", "latency"])
        count(name)
        return name

    def fault_body(fault):
        if flavor == "dynamodb":
            status, kind, message = DYNAMO_FAULTS[fault]
            return status, "application/x-amz-json-1.0", json.dumps({"__type": kind, "message": message}).encode()
        code, status = ("SlowDown", 503) if fault == "slowdown" else ("InternalError", 500)
        body = f"<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>soak fault</Message></Error>"
        return status, "application/xml", body.encode()

    def get_item(headers, body):
        """A GetItem of the proxy's own (the count's item sizes), signed
        like the request it serves: DynamoDB Local reads no signature."""
        headers = {k: v for k, v in headers.items() if k.lower() not in ("x-amz-target", "content-length")} | {
            "X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Length": str(len(body))}
        _, _, data = forward("POST", "/", headers, body)
        return data

    def forward(method, path, headers, body):
        for attempt in range(2):
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            try:
                conn.request(method, path, body=body, headers={k: v for k, v in headers.items()
                                                               if k.lower() != "connection"})
                res = conn.getresponse()
                data = res.read()
                return res.status, res.getheaders(), data
            except (OSError, http.client.HTTPException):
                conn.close()
                local.conn = None
                if attempt:
                    raise
        raise RuntimeError("unreachable")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body are two writes: with Nagle's algorithm the
        # body waits for the client's delayed ACK of the headers, 40 ms a call.
        disable_nagle_algorithm = True

        def _any(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            fault = pick()
            if fault == "latency":
                time.sleep(latency.value)
            elif fault:
                return self._fail(fault)
            headers = dict(self.headers.items())
            if flavor == "dynamodb":
                op = (self.headers.get("x-amz-target") or "?").rsplit(".", 1)[-1]
                count("op " + op)
                count("item " + op + " " + ",".join(partitions(body)))
                request_body = body
                body = capacity.with_consumed_capacity(op, body)
                headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}
                headers["Content-Length"] = str(len(body))
                sized = metering.value and op == "TransactWriteItems"
                if sized:
                    before = capacity.transaction_sizes(request_body, lambda b: get_item(headers, b))
            else:
                count("op " + self.command)
            status, answer_headers, data = forward(self.command, self.path, headers, body)
            if flavor == "dynamodb" and status == 200:
                if sized:
                    after = capacity.transaction_sizes(request_body, lambda b: get_item(headers, b))
                    count("wu", capacity.transaction_write_units(before, after))
                else:
                    kind, units = capacity.consumed_capacity(op, data)
                    if kind:
                        count(kind, units)
            self.send_response_only(status)
            for name, value in answer_headers:
                if name.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
                    self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _fail(self, fault):
            status, ctype, data = fault_body(fault)
            self.send_response_only(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.handle_error = quiet
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while True:
        try:
            control.recv()
        except EOFError:
            return
        with lock:
            control.send(dict(counts))
