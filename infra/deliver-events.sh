#!/usr/bin/env bash
# Delivers pending events to the functions under infra/watch.sh once, as Lambda's event
# source mappings do in AWS:
#   1. the outbox table's items (what its stream would carry as INSERT records) go to
#      paddock-outbox-relay as one DynamoDB stream event, which sends them to the queues;
#   2. each queue's messages go to its consumer as SQS events of up to 10 records: queue
#      paddock-<name> to function paddock-<name> (functions/<name>), as the emulator runs
#      create them; the messages the consumer does not list in batchItemFailures are
#      deleted, the others stay for the next delivery.
# Prints each invocation's answer. Run it again to deliver what the consumers emitted
# (achievement unlocks go through the outbox too).
#
#   infra/deliver-events.sh     # against http://127.0.0.1:${PADDOCK_WATCH_PORT:-9000}
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
eval "$("$root/infra/emulators.sh" env)"

functions=()
for dir in "$root"/functions/*/; do functions+=("$(basename "$dir")"); done

exec "$tools/venv/bin/python" - "${PADDOCK_WATCH_PORT:-9000}" "${Store__TablePrefix:-paddock-}" "${functions[@]}" <<'PY'
import json, sys, time, urllib.request
import boto3

port, prefix, functions = sys.argv[1], sys.argv[2], set(sys.argv[3:])
region = "us-east-1"
account = "123456789012"


def invoke(function, event):
    url = f"http://127.0.0.1:{port}/2015-03-31/functions/{function}/invocations"
    request = urllib.request.Request(url, data=json.dumps(event).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        body = answer.read().decode()
    print(f"{function}: {body}")
    return json.loads(body) if body else {}


# 1. The outbox stream.
dynamodb = boto3.client("dynamodb")
table = f"{prefix}outbox"
items, start = [], None
while True:
    page = dynamodb.scan(TableName=table, **({"ExclusiveStartKey": start} if start else {}))
    items += page["Items"]
    start = page.get("LastEvaluatedKey")
    if not start:
        break
items.sort(key=lambda item: item["sk"]["S"])  # event ids are time-ordered
if items:
    records = []
    for n, item in enumerate(items):
        records.append({
            "eventID": f"{n:032x}", "eventName": "INSERT", "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": region,
            "eventSourceARN": f"arn:aws:dynamodb:{region}:{account}:table/{table}/stream/local",
            "dynamodb": {
                "ApproximateCreationDateTime": time.time(),
                "Keys": {"pk": item["pk"], "sk": item["sk"]},
                "NewImage": item,
                "SequenceNumber": f"{n + 1:021d}",
                "SizeBytes": len(json.dumps(item)),
                "StreamViewType": "NEW_IMAGE",
            },
        })
    invoke("paddock-outbox-relay", {"Records": records})
else:
    print("outbox: nothing pending")

# 2. The queues.
sqs = boto3.client("sqs")
urls = sqs.list_queues(QueueNamePrefix="paddock-").get("QueueUrls", [])
for url in sorted(urls):
    name = url.rsplit("/", 1)[-1]
    if name.endswith("-dlq"):
        continue
    if name.removeprefix("paddock-") not in functions:
        print(f"{name}: no function consumes it here")
        continue
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                  AttributeNames=["All"]).get("Messages", [])
        if not got:
            break
        records = [{
            "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": m.get("Attributes", {}), "messageAttributes": {},
            "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:{region}:{account}:{name}", "awsRegion": region,
        } for m in got]
        answer = invoke(name, {"Records": records})
        failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
        done = [m for m in got if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)])
        if failed:
            print(f"{name}: {len(failed)} to be delivered again after the visibility timeout")
            break
PY
