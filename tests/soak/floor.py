"""The floor under the soak's latencies, measured in the same run: DynamoDB
Local answering the calls the service makes (a GetItem, and a
TransactWriteItems of four conditional puts, as a filing or a send writes),
through the same fault proxy, from one client and from as many at once as
the soak has agents (at most 16). A route that makes n calls one after
another cannot answer faster than about n of these."""

import threading
import time
import uuid

import boto3
from botocore.config import Config as BotoConfig

CALLS = 160


def measure(dynamo_url, concurrency, log):
    client = boto3.client("dynamodb", endpoint_url=dynamo_url, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test",
                          config=BotoConfig(max_pool_connections=32, retries={"max_attempts": 0}))
    table = "floor-" + uuid.uuid4().hex[:8]
    client.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "sk", "AttributeType": "S"}])
    body = {"S": "x" * 600}
    client.put_item(TableName=table, Item={"pk": {"S": "read"}, "sk": {"S": "#"}, "v": body})

    def get(_i):
        client.get_item(TableName=table, Key={"pk": {"S": "read"}, "sk": {"S": "#"}})

    def transact(i):
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": table, "Item": {"pk": {"S": f"t{i}"}, "sk": {"S": str(k)}, "v": body},
                     "ConditionExpression": "attribute_not_exists(pk)"}} for k in range(4)])

    out = {}
    for name, call in (("GetItem", get), ("TransactWriteItems of 4", transact)):
        for clients in sorted({1, max(1, min(16, concurrency))}):
            out[f"{name}, {clients} at once"] = timed(call, clients, f"{name}-{clients}")
    client.delete_table(TableName=table)
    for what, r in out.items():
        log(f"  DynamoDB Local floor, {what}: {r['per second']}/s, p50 {r['p50 ms']} ms, p99 {r['p99 ms']} ms")
    return out


def timed(call, clients, tag):
    numbers = iter(range(CALLS))
    lock = threading.Lock()
    latencies = []

    def work():
        while True:
            with lock:
                n = next(numbers, None)
            if n is None:
                return
            started = time.perf_counter()
            call(f"{tag}-{n}")
            took = time.perf_counter() - started
            with lock:
                latencies.append(took * 1000)

    started = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    latencies.sort()
    return {"calls": CALLS, "per second": round(CALLS / seconds, 1),
            "p50 ms": round(latencies[len(latencies) // 2], 2),
            "p99 ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2)}
