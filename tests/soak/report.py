"""What the soak prints and writes: the invariants, then throughput, p50/p99
per route, errors by kind and the faults injected (JSON and Markdown)."""

import calendar
import json
import os
import platform
import re
import time


def print_invariants(results):
    print("\n== invariants", flush=True)
    failed = False
    for name, (bad, figures) in results.items():
        mark = "ok  " if not bad else "FAIL"
        failed |= bool(bad)
        extra = ""
        if isinstance(figures, dict):
            extra = "  " + ", ".join(f"{k}: {v}" for k, v in figures.items() if not isinstance(v, (list, dict)))
        elif isinstance(figures, int):
            extra = f"  ({figures} checked)"
        print(f"  {mark} {name}{extra}")
        for line in bad[:10]:
            print(f"         - {line}")
        if len(bad) > 10:
            print(f"         ... and {len(bad) - 10} more")
    print("== " + ("SOME INVARIANTS FAILED" if failed else "every invariant holds"), flush=True)
    return failed


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def routes(calls, seconds):
    by = {}
    for c in calls:
        by.setdefault(c["route"], []).append(c)
    out = {}
    for route, cs in sorted(by.items()):
        answered = [(c["end"] - c["start"]) * 1000 for c in cs if c["status"] is not None and c["status"] < 500]
        out[route] = {"requests": len(cs), "per second": round(len(cs) / seconds, 2),
                      "p50 ms": round(percentile(answered, 50) or 0, 1),
                      "p99 ms": round(percentile(answered, 99) or 0, 1)}
    return out


def build(run, results):
    seconds = run.t_end - run.t0
    calls = [c for c in run.recorder.calls if run.t0 <= c["start"] <= run.t_end and c["route"] not in ("check",)]
    filed = [d for d in run.inbound.drops if d["at"] <= run.t_end]
    _, kinds = results["no 5xx but 503 + Retry-After (store failing) or 500 Send failed (relay failing)"]
    _, send_notes = results["one relay copy per Idempotency-Key; every 200 reached the relay"]
    _, inbound_counts = results["inbound filed once (or failed once, with a reason)"]
    relay = {}
    for r in run.relay.received:
        relay[r["outcome"]] = relay.get(r["outcome"], 0) + 1
    hooks = {}
    for p in run.webhooks.posts:
        hooks[p["mode"]] = hooks.get(p["mode"], 0) + 1
    load = load_load()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run.t0)),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, load average at the end {load}",
        "seed": run.seed, "agents": len(run.accounts), "think seconds": run.args.think, "seconds": round(seconds, 1),
        "onboarding seconds": round(run.onboard_seconds, 1),
        "requests": len(calls), "requests per second": round(len(calls) / seconds, 1),
        "answered per second": round(sum(1 for c in calls if c["status"] is not None) / seconds, 1),
        "routes": routes(calls, seconds),
        "answers by kind": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        "sends": send_notes,
        "inbound": dict(inbound_counts, **{"dropped per second": round(len(filed) / seconds, 2),
                                           "deliver failures": len(run.inbound.failures)}),
        "faults planned": [{"at": s, "seconds": n, "kind": k} for s, n, k in run.plan],
        "faults played": sorted(({"kind": w["kind"], "at": round(w["start"] - run.t0, 1),
                                  "seconds": round(w["end"] - w["start"], 1)} for w in run.player.windows),
                                key=lambda w: w["at"]),
        "dynamodb proxy": run.dynamo_proxy.counts, "s3 proxy": run.s3_proxy.counts,
        "relay": relay, "webhook posts": hooks, "server starts": run.server.starts,
        "server starts that exited (store unreachable)": run.server.failed_starts,
        "invariants": {name: {"holds": not bad, "violations": bad[:50]} for name, (bad, _) in results.items()},
        "memory": results["memory (RSS) roughly flat"][1],
        "drop to listed": drop_to_listed(run.probe.samples),
        "server-side latency": server_side(run.server.log, run.t0, run.t_end),
        "cpu seconds during the load": getattr(getattr(run, "cpu", None), "summary", None),
        "storage requests per request": getattr(run, "storage", None),
        "DynamoDB Local alone (the floor)": getattr(run, "floor", None),
        "IMAP lane": imap_lane(results),
    }


def imap_lane(results):
    """The IMAP lane's figures (imap.py), or None when it did not run."""
    for name, (_, figures) in results.items():
        if name.startswith("IMAP and the API") and isinstance(figures, dict):
            return figures
    return None


LOG_LINE = re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z .*\brequest method="(\w+)" '
                      r'route="([^"]*)" status=(\d+) latency_us=(\d+)')


def server_side(log_path, t0, t_end):
    """p50/p99 per route as the server measured them (its request log: from
    the request's arrival to its answer), for the load's requests answered
    below 500. GET /inbox mixes every kind of read, waits included."""
    by = {}
    try:
        lines = open(log_path, errors="replace")
    except OSError:
        return {}
    with lines:
        for line in lines:
            m = LOG_LINE.match(line)
            if not m:
                continue
            at = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float(m.group(2) or 0)
            if not t0 <= at <= t_end or int(m.group(5)) >= 500:
                continue
            by.setdefault(f"{m.group(3)} {m.group(4)}", []).append(int(m.group(6)) / 1000)
    return {route: {"requests": len(v), "p50 ms": round(percentile(v, 50), 2), "p99 ms": round(percentile(v, 99), 2)}
            for route, v in sorted(by.items()) if len(v) >= 20}


def drop_to_listed(samples):
    listed = [s * 1000 for s in samples if s is not None]
    return {"probes": len(samples), "not listed in 30 s": len(samples) - len(listed),
            "p50 ms": round(percentile(listed, 50) or 0, 1), "p99 ms": round(percentile(listed, 99) or 0, 1)}


def load_load():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return None


def write(summary, path):
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.splitext(path)[0] + ".md", "w") as f:
        f.write(markdown(summary))


def markdown(s):
    pace = (f"each pausing about {s['think seconds']} s after an answer" if s.get("think seconds")
            else "each in a closed loop")
    lines = [f"Soak of {s['date']}: {s['agents']} agents ({pace}) for {s['seconds']} s (seed {s['seed']}); "
             f"{s['machine']}.", "",
             f"{s['requests']} requests, {s['requests per second']}/s ({s['answered per second']}/s answered); "
             f"server started {s['server starts']} times "
             f"({s['server starts that exited (store unreachable)']} of them exited at once, the store unreachable).", "",
             "| route | requests | per s | p50 ms | p99 ms |", "|---|---:|---:|---:|---:|"]
    for route, r in s["routes"].items():
        lines.append(f"| {route} | {r['requests']} | {r['per second']} | {r['p50 ms']} | {r['p99 ms']} |")
    if s.get("server-side latency"):
        lines += ["", "As the server timed them (its request log, arrival to answer; GET /inbox is every kind of read):",
                  "", "| route | requests | p50 ms | p99 ms |", "|---|---:|---:|---:|"]
        lines += [f"| {route} | {r['requests']} | {r['p50 ms']} | {r['p99 ms']} |"
                  for route, r in s["server-side latency"].items()]
    if s.get("DynamoDB Local alone (the floor)"):
        lines += ["", "DynamoDB Local alone, through the same proxy, measured before the load (the floor: a route "
                  "making n calls one after another cannot answer faster than about n of these):",
                  "", "| call | per s | p50 ms | p99 ms |", "|---|---:|---:|---:|"]
        lines += [f"| {what} | {r['per second']} | {r['p50 ms']} | {r['p99 ms']} |"
                  for what, r in s["DynamoDB Local alone (the floor)"].items()]
    lines += ["", "| answer | count |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in s["answers by kind"].items()]
    lines += ["", "Faults played: " + ", ".join(f"{w['kind']} at +{w['at']}s for {w['seconds']}s"
                                                  for w in s["faults played"]) + ".",
              f"DynamoDB proxy: {s['dynamodb proxy']}; S3 proxy: {s['s3 proxy']}; relay copies: {s['relay']}; "
              f"webhook posts by receiver mode: {s['webhook posts']}.",
              f"Sends: {s['sends']}.", f"Inbound: {s['inbound']}.",
              f"Drop to listed (a probe message read by its Message-ID every 20 ms): {s['drop to listed']}.", f"Memory: {s['memory']}.",
              f"CPU seconds during the load: {s['cpu seconds during the load']}.", ""]
    if s.get("IMAP lane"):
        lane = ", ".join(f"{k}: {v}" for k, v in s["IMAP lane"].items() if not isinstance(v, (dict, list)))
        lines += [f"IMAP lane (a mail app over IMAP beside the agents, with the mailbox sync's faults): {lane}.", ""]
    if s.get("storage requests per request"):
        lines += ["Storage requests per request (DynamoDB calls at the proxy, one route at a time):", "",
                  "| route | requests | per request | docs/data-model.md |", "|---|---:|---|---|"]
        for route, r in s["storage requests per request"].items():
            documented = "" if "expected" not in r else ("as documented" if r["as documented"]
                                                          else f"documented: {r['expected']}")
            lines.append(f"| {route} | {r['requests']} | {r['per request']} | {documented} |")
        lines.append("")
    lines += ["| invariant | holds |", "|---|---|"]
    lines += [f"| {name} | {'yes' if v['holds'] else 'NO: ' + '; '.join(v['violations'][:3])} |"
              for name, v in s["invariants"].items()]
    return "\n".join(lines) + "\n"
