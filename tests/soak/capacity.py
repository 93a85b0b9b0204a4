"""Write and read units per request, as DynamoDB bills them, for the soak's
storage count (storage.py).

The fault proxy asks DynamoDB for `ReturnConsumedCapacity: TOTAL` on every
call it forwards (the server never asks) and adds up what comes back. DynamoDB
Local computes it by DynamoDB's rules for single-item calls, queries and
batches (a 2.5 KB put is 3 write units; a read 1 per 4 KB, half that when
eventually consistent), but not for TransactWriteItems: five 1.5 KB puts in one
transaction answer 4 units where DynamoDB bills 20 (2 per KB per item). So
while the count runs, a transaction's units are computed here by DynamoDB's
rule instead: each item, the larger of its size before and after, rounded up
to 1 KB, times 2 (a ConditionCheck too), the sizes read from DynamoDB Local
just before and just after the call."""

import json
import math

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
READS = {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
KEY_ATTRIBUTES = ("pk", "sk")


def with_consumed_capacity(op, body):
    """The request asking DynamoDB to return what it consumed (DynamoDB
    Local does not check the signature this change breaks)."""
    if op not in WRITES | READS:
        return body
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return body
    request["ReturnConsumedCapacity"] = "TOTAL"
    return json.dumps(request).encode()


def consumed_capacity(op, data):
    """("wu" or "ru", the units an answer says it consumed), or (None, 0)."""
    kind = "wu" if op in WRITES else "ru" if op in READS else None
    if not kind:
        return None, 0
    try:
        consumed = json.loads(data or b"{}").get("ConsumedCapacity")
    except ValueError:
        return None, 0
    if isinstance(consumed, dict):
        consumed = [consumed]
    return kind, sum(float(c.get("CapacityUnits") or 0) for c in consumed or [] if isinstance(c, dict))


def value_size(value):
    """A DynamoDB attribute value's size in bytes, by DynamoDB's rules."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        digits = v.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(v) * 3 // 4  # base64 on the wire
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(value_size({"N": n}) for n in v)
    if kind == "L":
        return 3 + sum(1 + value_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(e) for k, e in v.items())
    return 0


def item_size(item):
    return sum(len(name.encode()) + value_size(value) for name, value in (item or {}).items())


def transaction_sizes(body, get_item):
    """Each item of a TransactWriteItems request, its size as DynamoDB Local
    holds it now (0 when absent); `get_item(request body)` answers a GetItem."""
    try:
        items = json.loads(body or b"{}").get("TransactItems") or []
    except ValueError:
        return []
    sizes = []
    for entry in items:
        (kind, action), = entry.items()
        key = action.get("Key") or {k: action["Item"][k] for k in KEY_ATTRIBUTES if k in action.get("Item", {})}
        found = get_item(json.dumps({"TableName": action["TableName"], "Key": key, "ConsistentRead": True}).encode())
        try:
            held = json.loads(found or b"{}").get("Item")
        except ValueError:
            held = None
        sizes.append((kind, item_size(held), item_size(action.get("Item"))))
    return sizes


def transaction_write_units(before, after):
    """DynamoDB's bill for one transaction: 2 units per KB of each item, the
    larger of its size before and after (a put: the item it writes)."""
    units = 0
    for (kind, held_before, written), (_, held_after, _) in zip(before, after):
        size = max(held_before, held_after, written)
        units += 2 * max(1, math.ceil(size / 1024))
    return units
