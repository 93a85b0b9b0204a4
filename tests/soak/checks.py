"""The invariants the soak checks after its run, each a list of violations
(empty: it holds) plus the figures it printed them from."""

import statistics
import time
import urllib.parse

from faults import RELAY_KINDS, STORE_KINDS

INITIAL_CREDITS = 100
SEND_PER_MINUTE, SEND_PER_DAY = 5, 50


def bare(message_id):
    return (message_id or "").strip().strip("<>")


def overlaps(windows, kinds, start, end, before, after):
    return any(w["kind"] in kinds and w["start"] - before <= end and start <= w["end"] + after for w in windows)


def page_all(client, key, query, field):
    """Every item of a listing, following nextCursor."""
    out, cursor = [], None
    for _ in range(1000):
        q = dict(query, limit=50)
        if cursor:
            q["cursor"] = cursor
        record, answer = client.call("GET", "/inbox?" + urllib.parse.urlencode(q), key, route="check")
        if record["status"] != 200:
            raise RuntimeError(f"listing {query}: {record} {answer}")
        out.extend(answer.get(field) or [])
        cursor = answer.get("nextCursor")
        if not cursor:
            return out
    raise RuntimeError("listing did not end")


# ---------------------------------------------------------------- inbound


def spool_state(s3, bucket):
    keys = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="inbound/"):
        keys.update(o["Key"] for o in page.get("Contents", []))
    return keys


def wait_drained(s3, bucket, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not any(k.startswith("inbound/pending/") for k in spool_state(s3, bucket)):
            return True
        time.sleep(1)
    return False


def kept(s3, bucket):
    """The spool files set aside in the versioned bucket: a delete marker
    over a version that keeps the file."""
    versions, deleted = set(), set()
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix="inbound/pending/"):
        versions.update(v["Key"] for v in page.get("Versions", []))
        deleted.update(m["Key"] for m in page.get("DeleteMarkers", []) if m["IsLatest"])
    return versions & deleted


def inbound(drops, s3, bucket, rows_by_mailbox):
    """Every drop ends filed (deleted, its version kept: the bucket is
    versioned, so no copy under done/) or in failed/ (with its reason),
    never both and never still pending; every generated message is listed
    exactly once in its mailbox, however often it was dropped."""
    bad = []
    keys = spool_state(s3, bucket)
    copies = sorted(k for k in keys if k.startswith("inbound/done/"))
    if copies:
        bad.append(f"{len(copies)} filed files were copied to done/ in a versioned bucket, such as {copies[0]}")
    set_aside = kept(s3, bucket)
    counts = {"done": 0, "failed": 0, "failed generated": 0}
    for drop in drops:
        name = drop["key"].rsplit("/", 1)[1]
        failed = f"inbound/failed/{name}" in keys
        # A refused file is moved: its pending key is deleted too.
        done = drop["key"] in set_aside and not failed
        if drop["key"] in keys:
            bad.append(f"{drop['key']} is still pending")
        elif done == failed:
            bad.append(f"{drop['key']}: done {done}, failed {failed}")
        elif failed and f"inbound/failed/{name}.reason" not in keys:
            bad.append(f"{drop['key']} failed without a reason")
        counts["done" if done else "failed"] += done or failed
        if failed and drop["kind"] == "generated":
            counts["failed generated"] += 1
            bad.append(f"{drop['key']} (generated, to {drop['recipient']}) failed")
    expected = {}
    for drop in drops:
        if drop["messageId"]:
            expected.setdefault(drop["recipient"], set()).add(drop["messageId"])
    for mailbox, ids in expected.items():
        listed = [bare(r["messageId"]) for r in rows_by_mailbox.get(mailbox, []) if r.get("box", "inbound") == "inbound"]
        for mid in ids:
            n = listed.count(mid)
            if n != 1:
                bad.append(f"<{mid}> is listed {n} times in {mailbox}")
    counts["drops"] = len(drops)
    counts["distinct generated"] = sum(len(v) for v in expected.values())
    counts["dropped twice"] = len(drops) - len({(d["file"], d["recipient"]) for d in drops})
    return bad, counts


# ---------------------------------------------------------------- sends


def sends(all_sends, relay, windows):
    """Per Idempotency-Key at most one copy reached the relay (a copy the
    relay kept and then dropped the connection on is the documented
    exception, counted apart); every 200 reached it."""
    bad, notes = [], {"keyed": 0, "unkeyed": 0, "answered 200": 0, "duplicates after a relay drop": 0,
                      "unkeyed sent twice": 0, "keys left in progress": 0}
    by_subject = {}
    for r in relay:
        by_subject.setdefault(r["subject"], []).append(r)
    accepted_ids = {r["message_id"] for r in relay if r["outcome"] == "accepted"}
    for send in all_sends:
        notes["keyed" if send["keyed"] else "unkeyed"] += 1
        ids = {bare(a["messageId"]) for a in send["attempts"] if a["status"] == 200}
        notes["answered 200"] += bool(ids)
        for mid in ids:
            if mid not in accepted_ids:
                bad.append(f"{send['tag']}: answered 200 as <{mid}> but the relay never accepted it")
        copies = by_subject.get(send["tag"], [])
        if send["keyed"]:
            if len(ids) > 1:
                bad.append(f"{send['tag']}: one key answered with {len(ids)} Message-IDs")
            if len(copies) > 1:
                if any(c["outcome"] == "dropped" for c in copies[:-1]):
                    notes["duplicates after a relay drop"] += 1
                else:
                    bad.append(f"{send['tag']}: one Idempotency-Key reached the relay {len(copies)} times")
            last = send["attempts"][-1]
            if last["status"] == 409 and not ids:
                notes["keys left in progress"] += 1
        elif len(copies) > 1:
            notes["unkeyed sent twice"] += 1
    return bad, notes


def charged(send):
    """(charges known, charges unknown) of one logical send."""
    known_ids, failed, unknown = set(), 0, 0
    for a in send["attempts"]:
        if a["status"] == 200:
            known_ids.add(a["messageId"])
        elif a["status"] == 500 and a["error"] == "Send failed":
            failed += 1
        elif a["failure"] or (a["status"] or 0) >= 500:
            unknown += 1
    return len(known_ids) + failed, unknown


def credits(all_sends, balances):
    bad, rows = [], []
    for account, remaining in sorted(balances.items()):
        mine = [s for s in all_sends if s["account"] == account]
        known = sum(charged(s)[0] for s in mine)
        unknown = sum(charged(s)[1] for s in mine)
        low, high = INITIAL_CREDITS - known - unknown, INITIAL_CREDITS - known
        rows.append((account, remaining, low, high))
        if remaining is None or not low <= remaining <= high:
            bad.append(f"account {account}: {remaining} credits left, expected {low}..{high}")
    return bad, rows


def rate_windows(all_sends):
    """Sends answered 200 (first answers) wholly inside one clock minute:
    at most the minute's limit; in all, at most the day's."""
    bad = []
    by_account = {}
    for send in all_sends:
        seen = set()
        for a in send["attempts"]:
            if a["status"] == 200 and a["messageId"] not in seen:
                seen.add(a["messageId"])
                by_account.setdefault(send["account"], []).append(a)
    for account, answers in by_account.items():
        minutes = {}
        for a in answers:
            if int(a["start"] // 60) == int(a["end"] // 60):
                minutes[int(a["start"] // 60)] = minutes.get(int(a["start"] // 60), 0) + 1
        over = {m: n for m, n in minutes.items() if n > SEND_PER_MINUTE}
        if over:
            bad.append(f"account {account}: {over} sends in one minute")
        if len(answers) > SEND_PER_DAY:
            bad.append(f"account {account}: {len(answers)} sends in a day")
    return bad


# ---------------------------------------------------------------- threads


def unread_counts(client, accounts):
    """Each thread's unreadCount equals the unread inbound rows the flat
    list shows on it, in every folder."""
    bad, checked = [], 0
    for account in accounts:
        rows = page_all(client, account["key"], {}, "messages")
        unread = {}
        for r in rows:
            if r.get("box", "inbound") == "inbound" and r.get("unread"):
                unread[r["threadId"]] = unread.get(r["threadId"], 0) + 1
        for folder in ("inbox", "archive", "trash"):
            for t in page_all(client, account["key"], {"view": "threads", "folder": folder}, "threads"):
                checked += 1
                tid = t.get("threadId") or t.get("id")
                if t.get("unreadCount") != unread.get(tid, 0):
                    bad.append(f"account {account['i']} thread {tid}: unreadCount {t.get('unreadCount')}, "
                               f"unread rows {unread.get(tid, 0)}")
    return bad, checked


# ---------------------------------------------------------------- statuses, log, memory


def statuses(calls, windows):
    """No 5xx but a 503 with Retry-After while the store fails, or the
    spec's 500 'Send failed' while the relay fails."""
    bad, kinds = [], {}
    for c in calls:
        status = c["status"]
        if c["route"] == "probe" and status == 404:
            continue  # not filed yet: the probe asks again
        if status is None:
            during_kill = overlaps(windows, {"kill"}, c["start"], c["end"], 0, 5)
            kind = f"{c['failure']} ({'server killed' if during_kill else 'server up'})"
        else:
            kind = f"{status} {c.get('error') or ''}".strip()
        kinds[kind] = kinds.get(kind, 0) + 1
        if status is None or status < 500:
            continue
        if status == 503 and c.get("retry_after") and overlaps(windows, STORE_KINDS, c["start"], c["end"], 2, 15):
            continue
        if (status == 500 and c.get("error") == "Send failed" and c["route"] == "POST /sendMail"
                and overlaps(windows, RELAY_KINDS, c["start"], c["end"], 2, 60)):
            continue
        bad.append(f"{c['route']} answered {status} {c.get('error')!r} (Retry-After {c.get('retry_after')}) "
                   f"at {time.strftime('%H:%M:%S', time.gmtime(c['start']))}")
    return bad, kinds


def panics(log_path):
    with open(log_path, errors="replace") as f:
        # The panic's own line; a backtrace's frames name std::panic too.
        return [line.strip()[:300] for line in f if "panicked at" in line]


def memory(rss, t0, t_end):
    """RSS of the load phase: the median of its last third against its
    second third (the first warms caches up), per the server's last start
    when it was killed in between."""
    samples = [(t, kb) for t, kb, _ in rss if t0 <= t <= t_end]
    if len(samples) < 9:
        return [], {"samples": len(samples)}
    third = len(samples) // 3
    middle = statistics.median(kb for _, kb in samples[third:2 * third])
    last = statistics.median(kb for _, kb in samples[2 * third:])
    peak = max(kb for _, kb in samples)
    figures = {"samples": len(samples), "middle MiB": round(middle / 1024, 1), "last MiB": round(last / 1024, 1),
               "peak MiB": round(peak / 1024, 1)}
    bad = []
    if last > middle * 1.5 and last - middle > 64 * 1024:
        bad.append(f"RSS grew from {middle // 1024} MiB to {last // 1024} MiB")
    return bad, figures
