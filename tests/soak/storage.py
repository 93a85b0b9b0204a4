"""Storage requests per request, counted where the server makes them: at the
DynamoDB fault proxy, which sees every call. One route at a time, from one
client, after the load, on a server started with its scheduled jobs far
apart (so nothing else calls DynamoDB meanwhile); a quiet interval as long
as the routes' is counted too, and must be empty.

What each route should make is what docs/data-model.md lists for it."""

import time
import urllib.parse

# docs/data-model.md, "Storage requests per route", for what the soak's
# agents do: a keyed route's one GetItem `KEY#` (standard keys), then the
# route's own. A list read of rows already read, a thread already read and
# a mark that changes a flag are the steady state the soak drives.
EXPECTED = {
    "GET /credits": {"GetItem": 1, "BatchGetItem": 1},
    "GET /inbox (list)": {"GetItem": 1, "Query": 1},
    # The list's copies, then their summaries (their counts).
    "GET /inbox (threads)": {"GetItem": 1, "Query": 1, "BatchGetItem": 1},
    # The summary and the rows' pointers at once, then the rows.
    "GET /inbox (thread, read before)": {"GetItem": 2, "Query": 1, "BatchGetItem": 1},
    # A thread marked: its summary, its rows (pointers, then rows), the
    # change; then the answer's summary and rows.
    "POST /inbox (mark)": {"GetItem": 3, "Query": 2, "BatchGetItem": 2, "TransactWriteItems": 1},
    # A thread moved: its summary; the summary's version, the summary's
    # change, the rows, their pointers moved; then the answer's summary and rows.
    "POST /inbox (move)": {"GetItem": 4, "Query": 2, "BatchGetItem": 2, "TransactWriteItems": 2},
    # KEY# (beside the rest once the server has read that key before); then
    # at once the account, its domains, its one domain's mailboxes, the send
    # lists, and one batch of the suppressions and the balance; then one
    # transaction (the windows on condition of the switches, the credit, the
    # delivery record, the audit row).
    "POST /sendMail": {"GetItem": 2, "BatchGetItem": 1, "TransactWriteItems": 1, "Query": 3},
}

# docs/data-model.md, "Write units per route", as DynamoDB's
# ReturnConsumedCapacity counts them (the fault proxy asks for it on every
# call): a read writes nothing; the rest are the steady state above, on the
# soak's own messages and sends.
WRITE_UNITS = {
    "GET /credits": 0,
    "GET /inbox (list)": 0,
    "GET /inbox (threads)": 0,
    "GET /inbox (thread, read before)": 0,
    # A standard key's plain send from the soak: its one transaction's 10
    # items (the rate windows' one item, the credit, the delivery and its
    # recipient, the outbox row and the Message-ID pointer, the contact, the
    # switch's check and the audit row), each under 1 KB, 2 each, and the
    # MBSYNC sent mark, which holds the signed message's bytes (1 to 2 KB), 4.
    "POST /sendMail": 22,
}


def measure(client, dynamo, account, fresh, log):
    """{route: {"requests": n, "per request": {operation: calls / n}, "items": {operation and
    item kinds: calls / n}, "expected": ...}}."""
    key = account["key"]
    dynamo.metering = True
    try:
        return _measure(client, dynamo, account, fresh, log)
    finally:
        dynamo.metering = False


def _measure(client, dynamo, account, fresh, log):
    key = account["key"]
    # The server was just started again: the client's kept connection is gone.
    listed = None
    for _ in range(20):
        record, listed = client.call("GET", "/inbox?limit=25", key, route="count")
        if record["status"] == 200:
            break
        time.sleep(0.5)
    listed_rows = [m for m in (listed or {}).get("messages", []) if m.get("threadId")]
    # A thread of the soak's own generated mail when there is one: its write
    # units are documented exactly (below).
    listed_rows.sort(key=lambda m: not str(m.get("messageId", "")).startswith("<gen-"))
    thread = listed_rows[0]["threadId"] if listed_rows else None
    out = {}

    def run(name, n, once):
        before, before_items, before_units = dynamo.operations(), dynamo.items(), dynamo.units()
        started = time.time()
        statuses = {}
        for i in range(n):
            record, _ = once(i)
            statuses[record["status"]] = statuses.get(record["status"], 0) + 1
        seconds = time.time() - started
        time.sleep(0.5)  # the last request's calls have all reached the proxy
        after, after_items, after_units = dynamo.operations(), dynamo.items(), dynamo.units()
        spent = {k: round((after_units[k] - before_units[k]) / n, 2) for k in ("wu", "ru")}
        calls = {op: after.get(op, 0) - before.get(op, 0) for op in after}
        per = {op: round(c / n, 2) for op, c in sorted(calls.items()) if c}
        items = {k: round((v - before_items.get(k, 0)) / n, 2) for k, v in sorted(after_items.items())
                 if v - before_items.get(k, 0)}
        entry = {"requests": n, "statuses": statuses, "per request": per, "items": items,
                 "write units": spent["wu"], "read units": spent["ru"], "seconds": round(seconds, 2)}
        if name in EXPECTED:
            entry["expected"] = EXPECTED[name]
            entry["as documented"] = per == {k: float(v) for k, v in EXPECTED[name].items()}
        if name in documented_units:
            entry["write units documented"] = documented_units[name]
            entry["write units as documented"] = spent["wu"] == documented_units[name]
        out[name] = entry
        log(f"  {name}: {per}" + ("" if name not in EXPECTED else
                                   ("  (as documented)" if entry["as documented"] else
                                    f"  (docs/data-model.md: {EXPECTED[name]})")))
        log(f"      by item: {items}")
        log(f"      write units {spent['wu']}, read units {spent['ru']}" + (
            "" if name not in documented_units else
            "  (as documented)" if entry["write units as documented"] else
            f"  (docs/data-model.md: {documented_units[name]} write units)"))

    documented_units = dict(WRITE_UNITS)

    def get(path, k=key):
        return lambda _i: client.call("GET", path, k, route="count")

    quiet_start = dynamo.operations()
    time.sleep(2)
    quiet = {op: n - quiet_start.get(op, 0) for op, n in dynamo.operations().items() if n - quiet_start.get(op, 0)}
    out["nothing (2 s)"] = {"requests": 0, "per request": quiet}
    log(f"  nothing for 2 s: {quiet or 'no call'}")
    run("GET /credits", 20, get("/credits"))
    run("GET /inbox (list)", 20, get("/inbox?limit=25"))
    run("GET /inbox (threads)", 20, get("/inbox?view=threads"))
    if thread:
        path = "/inbox?" + urllib.parse.urlencode({"thread": thread})
        _, viewed = client.call("GET", path, key, route="count")
        # Each move goes to the folder the thread is not in (a move to its own
        # folder writes nothing); the agents may have left it in either.
        current = ((viewed or {}).get("thread") or {}).get("folder", "inbox")
        rows = (viewed or {}).get("messages") or []
        # A thread of the soak's own generated mail alone (every item of it
        # under 1 KB) has documented write units: per row the row and its
        # search state, once the summary's count and the MBSYNC mark, each 2
        # units in a transaction; a move writes per row the row, its folder's
        # pointer moved and its search state, and its first transaction puts
        # the summary and moves its list copy. Corpus mail's rows vary in size.
        if rows and all(m.get("box") == "inbound" and str(m.get("messageId", "")).startswith("<gen-")
                        for m in rows):
            n = len(rows)
            documented_units["POST /inbox (mark)"] = 2 * (2 * n + 2)
            documented_units["POST /inbox (move)"] = 2 * (4 * n + 1) + 6
        log(f"  the thread counted: {len(rows)} row(s)"
            + ("" if "POST /inbox (mark)" in documented_units else
               f", not all of generated mail ({[(m.get('box'), m.get('messageId')) for m in rows][:5]}):"
               " its write units not checked"))
        folders = ["inbox", "archive"] if current != "inbox" else ["archive", "inbox"]
        run("GET /inbox (thread, read before)", 20, get(path))
        run("POST /inbox (mark)", 10, lambda i: client.call(
            "POST", "/inbox", key, {"thread": thread, "unread": i % 2 == 0}, route="count"))
        run("POST /inbox (move)", 10, lambda i: client.call(
            "POST", "/inbox", key, {"thread": thread, "folder": folders[i % 2]}, route="count"))
    # A fresh account: its sends are within the minute's five.
    run("POST /sendMail", 4, lambda i: client.call(
        "POST", "/sendMail", fresh["key"], {"to": f"count{i}@remote.soak.test", "subject": f"count {i}",
                                            "text": "Counting storage requests."}, route="count"))
    return out


def check(counted):
    """The invariant: every route with a documented count made exactly it,
    and spent exactly its documented write units."""
    bad = [f"{route}: {r['per request']} ({r['items']}), documented {r['expected']}"
           for route, r in counted.items() if "expected" in r and not r["as documented"]]
    bad += [f"{route}: {r['write units']} write units, documented {r['write units documented']}"
            for route, r in counted.items()
            if "write units documented" in r and not r["write units as documented"]]
    missing = [f"{route} was not counted" for route in {**EXPECTED, **WRITE_UNITS} if route not in counted]
    return bad + missing, sum(1 for r in counted.values() if "expected" in r)
