"""A Python client no one here wrote: openapi-python-client (PyPI) generates it
from the served API description, then it sends a mail and reads the inbox.

Usage: generated_client.py BASE_URL KEY FROM TO SUBJECT

Generates into a temporary directory with every warning fatal
(--fail-on-warning), checks that every operation of the document became a
function, then through the generated package: sends a mail from FROM to TO,
lists the inbox, and downloads the first attachment of the listed message
whose subject is SUBJECT. Prints one JSON object: the generator's exit code
and output, the operations it left out, and what each call answered.
"""

import glob
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile

import httpx

PACKAGE = "mailhost_client"
# What each generated endpoint module sends: `"method": "post", "url": "/sendMail"`.
CALL = re.compile(r'"method": "(\w+)",\s*"url": "([^"]+)"')


def generate(doc_url, out_dir):
    config = os.path.join(out_dir, "config.json")
    with open(config, "w") as f:
        # No post hooks: formatting the generated code is not what is tested.
        json.dump({"package_name_override": PACKAGE, "post_hooks": []}, f)
    tool = os.path.join(os.path.dirname(sys.executable), "openapi-python-client")
    run = subprocess.run(
        [
            tool,
            "generate",
            "--url",
            doc_url,
            "--meta",
            "none",
            "--config",
            config,
            "--output-path",
            os.path.join(out_dir, PACKAGE),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
    )
    return run.returncode, run.stdout + run.stderr


def missing_operations(doc, out_dir):
    """The operations (verb and path) of the document that no generated
    module calls."""
    called = set()
    for module in glob.glob(os.path.join(out_dir, PACKAGE, "api", "*", "*.py")):
        with open(module) as f:
            called.update(CALL.findall(f.read()))
    wanted = [
        (verb, path)
        for path, item in doc["paths"].items()
        for verb, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    ]
    return [f"{verb.upper()} {path}" for verb, path in wanted if (verb, path) not in called], len(wanted)


def main(base, key, sender, to, subject):
    out = {}
    doc_url = f"{base}/docs/openapi.json"
    doc = httpx.get(doc_url).json()
    with tempfile.TemporaryDirectory() as out_dir:
        out["exitCode"], out["output"] = generate(doc_url, out_dir)
        if out["exitCode"] != 0:
            print(json.dumps(out))
            return
        out["missing"], out["operations"] = missing_operations(doc, out_dir)

        sys.path.insert(0, out_dir)
        client_module = importlib.import_module(PACKAGE)
        send_mail = importlib.import_module(f"{PACKAGE}.api.send.send_mail")
        get_inbox = importlib.import_module(f"{PACKAGE}.api.inbox.get_inbox")
        get_attachment = importlib.import_module(f"{PACKAGE}.api.inbox.get_attachment")
        models = importlib.import_module(f"{PACKAGE}.models")

        client = client_module.AuthenticatedClient(base_url=base, token=key)
        body = models.SendInput(to=to, subject="From a generated client", text="Hello.", from_=sender)
        sent = send_mail.sync_detailed(client=client, body=body)
        out["send"] = {"status": int(sent.status_code), "body": json.loads(sent.content)}
        parsed = sent.parsed
        out["send"]["parsedType"] = type(parsed).__name__
        out["send"]["parsedMessageId"] = getattr(parsed, "message_id", None)

        listed = get_inbox.sync_detailed(client=client, limit=10)
        out["inbox"] = {"status": int(listed.status_code), "body": json.loads(listed.content)}
        parsed = listed.parsed
        out["inbox"]["parsedType"] = type(parsed).__name__
        rows = getattr(parsed, "messages", None) or []
        out["inbox"]["parsedSubjects"] = [m.subject for m in rows]

        row = next(m for m in rows if m.subject == subject)
        got = get_attachment.sync_detailed(client=client, id=row.id, index=0)
        out["attachment"] = {"status": int(got.status_code), "parsedType": type(got.parsed).__name__}
        if hasattr(got.parsed, "payload"):
            out["attachment"]["text"] = got.parsed.payload.read().decode()
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:6])
