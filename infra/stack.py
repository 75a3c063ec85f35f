#!/usr/bin/env python3
"""What an operator does to a deployed stack besides deploying it, without the AWS CLI.

    infra/stack.py outputs <env>                       # the stack's outputs (ApiUrl, AppSecretArn, ...)
    infra/stack.py teardown <env> [--with-data] [--yes]
    infra/stack.py redrive <env> <queue>               # dead letters back to their queue
    infra/stack.py restore-table <env> <table> <time>  # PITR copy of <stack>-<table> as of <time> (UTC)
    infra/stack.py copy-items <env> <from> <table> [<pk>]  # items of table <from> back into <stack>-<table>
    infra/stack.py continue-rollback <env>             # a stack stuck in UPDATE_ROLLBACK_FAILED
    infra/stack.py alarm-topic <env> <email>           # an SNS topic for AlarmTopicArn, mailing <email>

<env> is an environment of infra/samconfig.toml (PADDOCK_SAMCONFIG names another file): its
stack_name and region are used, so a command never reaches a stack of another environment or
region. infra/teardown.sh and infra/redrive.sh run the two commands with the tools' Python.

teardown deletes the environment's stack after the stack's name is typed back (--yes: no
question, for scripts). The tables, the bucket, the app secret and the log groups are retained
on purpose; --with-data deletes those too, and only those that the stack itself lists as its
resources (read before it is deleted), or, when the stack is already gone, those tagged
aws:cloudformation:stack-name=<stack>. Names are never matched by prefix: `paddock` and
`paddock-dev` share one.

redrive moves the messages of a queue's dead-letter queue back to the queue (<queue>:
track-maps, achievements, feed, accounts, webhooks), reading both URLs from the stack's
outputs; a message is deleted from the dead-letter queue only once it is sent.

restore-table restores the table as it was at <time> (e.g. 2026-11-27T21:30:00Z, within the
last 35 days) into a new table <stack>-<table>-restored-<time>, leaving the live one alone.
copy-items then writes that table's items (all of them, or one partition <pk>, e.g. one
driver's USER#<id>) back into the live table: the live table keeps its stream, TTL, backups
and the stack's hold on it, which a table restored under the same name would not have.

Needs boto3 (infra/tools.sh installs it) and credentials; AWS_ENDPOINT_URL* for emulators.
"""

import json
import os
import sys
import time

QUEUES = {
    "track-maps": "TrackMaps",
    "achievements": "Achievements",
    "feed": "Feed",
    "accounts": "Accounts",
    "webhooks": "Webhooks",
}


class Refused(Exception):
    """A one-line reason to stop, printed without a traceback."""


def say(line):
    print(line, flush=True)


def environment(env):
    """The environment's stack name and region, as infra/deploy.sh reads them."""
    import tomllib

    path = os.environ.get("PADDOCK_SAMCONFIG") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "samconfig.toml")
    try:
        with open(path, "rb") as f:
            settings = tomllib.load(f)
    except OSError as e:
        raise Refused(f"{path}: {e.strerror}")
    glob = settings.get(env, {}).get("global", {}).get("parameters")
    if not isinstance(glob, dict) or not glob.get("stack_name") or not glob.get("region"):
        envs = ", ".join(k for k in settings if k != "version")
        raise Refused(f"{path}: no stack_name and region in [{env}.global.parameters] (environments: {envs})")
    return glob["stack_name"], glob["region"]


class Aws:
    """boto3 clients in the environment's region (whatever AWS_REGION says: the stack lives
    where samconfig.toml deployed it)."""

    def __init__(self, region):
        try:
            import boto3
            import botocore.exceptions
        except ImportError:
            raise Refused("needs boto3: run infra/tools.sh, then use ~/.cache/paddock-tools/ops-venv/bin/python")
        self.session = boto3.session.Session(region_name=region)
        self.errors = botocore.exceptions
        self.region = region
        self._clients = {}

    def __call__(self, service):
        if service not in self._clients:
            self._clients[service] = self.session.client(service)
        return self._clients[service]

    def code(self, error):
        return getattr(error, "response", {}).get("Error", {}).get("Code", "")


def find_stack(aws, name):
    """The live stack of that name, or None."""
    try:
        stacks = aws("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except aws.errors.ClientError as e:
        if "does not exist" in str(e):
            return None
        raise
    live = [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"]
    return live[0] if live else None


def stack_resources(aws, stack_id):
    out = []
    pages = aws("cloudformation").get_paginator("list_stack_resources").paginate(StackName=stack_id)
    for page in pages:
        out += page["StackResourceSummaries"]
    return out


def outputs_of(stack):
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def cmd_outputs(env):
    name, region = environment(env)
    aws = Aws(region)
    stack = find_stack(aws, name)
    if stack is None:
        raise Refused(f"no stack {name} in {region}")
    for key, value in sorted(outputs_of(stack).items()):
        say(f"{key}\t{value}")


# ---- teardown


def retained_data(aws, name, resources):
    """What the stack keeps after its deletion, by the stack's own list: (kind, id) pairs."""
    data = []
    for r in resources:
        kind, physical = r["ResourceType"], r.get("PhysicalResourceId")
        if not physical:
            continue
        if kind == "AWS::DynamoDB::Table":
            data.append(("table", physical))
        elif kind == "AWS::S3::Bucket":
            data.append(("bucket", physical))
        elif kind == "AWS::SecretsManager::Secret":
            data.append(("secret", physical))
        elif kind == "AWS::Logs::LogGroup":
            data.append(("log group", physical))
        elif kind == "AWS::Lambda::Function":
            # A function that logged to its default group (stacks deployed before the
            # template made one per function) created it outside the stack, named after the
            # function exactly: taken when it exists.
            group = f"/aws/lambda/{physical}"
            found = aws("logs").describe_log_groups(logGroupNamePrefix=group).get("logGroups", [])
            if any(g["logGroupName"] == group for g in found):
                data.append(("log group", group))
    return dedupe(data)


def tagged_data(aws, name):
    """What is tagged as the stack's (CloudFormation tags what it creates), for a stack that
    is already gone."""
    kinds = {"dynamodb:table": "table", "s3": "bucket", "secretsmanager:secret": "secret", "logs:log-group": "log group"}
    data = []
    pages = aws("resourcegroupstaggingapi").get_paginator("get_resources").paginate(
        TagFilters=[{"Key": "aws:cloudformation:stack-name", "Values": [name]}],
        ResourceTypeFilters=list(kinds))
    for page in pages:
        for r in page["ResourceTagMappingList"]:
            arn = r["ResourceARN"]
            service, rest = arn.split(":")[2], arn.split(":", 5)[5]
            if service == "dynamodb" and rest.startswith("table/"):
                data.append(("table", rest.split("/")[1]))
            elif service == "s3":
                data.append(("bucket", rest))
            elif service == "secretsmanager":
                data.append(("secret", arn))
            elif service == "logs" and rest.startswith("log-group:"):
                data.append(("log group", rest.removeprefix("log-group:").removesuffix(":*")))
    return dedupe(data)


def dedupe(pairs):
    seen, out = set(), []
    for p in pairs:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def confirm(name, yes):
    if yes:
        return
    sys.stderr.write(f"Type the stack's name ({name}) to delete it: ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip()
    if answer != name:
        raise Refused(f"not confirmed ({answer!r} is not {name!r}); nothing deleted")


def delete_stack(aws, stack):
    cfn = aws("cloudformation")
    stack_id = stack["StackId"]
    cfn.delete_stack(StackName=stack_id)
    say(f"stack {stack['StackName']}: deleting")
    deadline = time.monotonic() + float(os.environ.get("PADDOCK_TEARDOWN_WAIT_SECONDS", "3600"))
    while True:
        try:
            status = cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"]
        except aws.errors.ClientError as e:
            if "does not exist" in str(e):
                status = "DELETE_COMPLETE"
            else:
                raise
        if status == "DELETE_COMPLETE":
            say(f"stack {stack['StackName']}: deleted")
            return
        if status == "DELETE_FAILED":
            raise Refused(f"stack {stack['StackName']}: DELETE_FAILED (see its events in the CloudFormation console); "
                          "nothing else deleted")
        if time.monotonic() > deadline:
            raise Refused(f"stack {stack['StackName']}: still {status}; run the teardown again later")
        time.sleep(5)


def empty_bucket(s3, bucket):
    """Every version and delete marker: a versioned bucket is not empty until those go too."""
    removed = 0
    paginator = s3.get_paginator("list_object_versions")
    while True:
        batch = []
        for page in paginator.paginate(Bucket=bucket):
            for entry in page.get("Versions", []) + page.get("DeleteMarkers", []):
                batch.append({"Key": entry["Key"], "VersionId": entry["VersionId"]})
        if not batch:
            return removed
        for i in range(0, len(batch), 1000):
            answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch[i:i + 1000], "Quiet": True})
            if answer.get("Errors"):
                e = answer["Errors"][0]
                raise Refused(f"bucket {bucket}: cannot delete {e['Key']}: {e['Message']}")
        removed += len(batch)


def delete_data(aws, data):
    gone = ("ResourceNotFoundException", "NoSuchBucket", "404")
    for kind, ident in data:
        try:
            if kind == "table":
                ddb = aws("dynamodb")
                # Deletion protection guards against exactly this call, so it is turned off
                # here, for this stack's own table only, right before it is deleted.
                if ddb.describe_table(TableName=ident)["Table"].get("DeletionProtectionEnabled"):
                    ddb.update_table(TableName=ident, DeletionProtectionEnabled=False)
                ddb.delete_table(TableName=ident)
                say(f"table {ident}: deleted")
            elif kind == "bucket":
                s3 = aws("s3")
                n = empty_bucket(s3, ident)
                s3.delete_bucket(Bucket=ident)
                say(f"bucket {ident}: {n} object versions removed, deleted")
            elif kind == "secret":
                aws("secretsmanager").delete_secret(SecretId=ident, RecoveryWindowInDays=7)
                say(f"secret {ident}: scheduled for deletion in 7 days (the console can cancel it until then)")
            elif kind == "log group":
                aws("logs").delete_log_group(logGroupName=ident)
                say(f"log group {ident}: deleted")
        except aws.errors.ClientError as e:
            if aws.code(e) in gone:
                say(f"{kind} {ident}: already gone")
            else:
                raise


def cmd_teardown(env, with_data, yes):
    name, region = environment(env)
    aws = Aws(region)
    stack = find_stack(aws, name)
    if stack is None:
        if not with_data:
            raise Refused(f"no stack {name} in {region}; nothing to delete (--with-data also removes its retained data)")
        data = tagged_data(aws, name)
        if not data:
            say(f"no stack {name} in {region}, and nothing tagged as its own")
            return
    else:
        data = retained_data(aws, name, stack_resources(aws, stack["StackId"]))
    say(f"stack {name} in {region}" + (" (already deleted)" if stack is None else ""))
    if with_data:
        for kind, ident in data:
            say(f"  and its {kind} {ident}")
    else:
        say("  its tables, bucket, secret and log groups are kept (--with-data deletes them)")
    confirm(name, yes)
    if stack is not None:
        delete_stack(aws, stack)
    if with_data:
        delete_data(aws, data)
    say(f"{name}: torn down")


# ---- redrive


def cmd_redrive(env, queue):
    if queue not in QUEUES:
        raise Refused(f"unknown queue {queue!r} (one of: {', '.join(QUEUES)})")
    name, region = environment(env)
    aws = Aws(region)
    stack = find_stack(aws, name)
    if stack is None:
        raise Refused(f"no stack {name} in {region}")
    outputs = outputs_of(stack)
    prefix = QUEUES[queue]
    source, dlq = outputs.get(f"{prefix}QueueUrl"), outputs.get(f"{prefix}DeadLetterQueueUrl")
    if not source or not dlq:
        raise Refused(f"stack {name} has no outputs {prefix}QueueUrl and {prefix}DeadLetterQueueUrl")
    sqs = aws("sqs")
    moved = 0
    while True:
        got = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                  VisibilityTimeout=60, MessageAttributeNames=["All"]).get("Messages", [])
        if not got:
            break
        entries = []
        for i, m in enumerate(got):
            entry = {"Id": str(i), "MessageBody": m["Body"]}
            if m.get("MessageAttributes"):
                entry["MessageAttributes"] = m["MessageAttributes"]
            entries.append(entry)
        sent = sqs.send_message_batch(QueueUrl=source, Entries=entries)
        ok = {s["Id"] for s in sent.get("Successful", [])}
        # Only what reached the queue leaves the dead-letter queue; the rest reappears there
        # after the visibility timeout.
        done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got) if str(i) in ok]
        if done:
            sqs.delete_message_batch(QueueUrl=dlq, Entries=done)
        moved += len(done)
        for f in sent.get("Failed", []):
            raise Refused(f"{queue}: a message could not be sent back ({f.get('Message', f.get('Code'))}); "
                          f"{moved} moved, the rest stay in the dead-letter queue")
    say(f"{queue}: {moved} message(s) moved from the dead-letter queue back to the queue")


# ---- restore


def cmd_restore_table(env, table, when):
    from datetime import datetime, timezone

    name, region = environment(env)
    aws = Aws(region)
    try:
        at = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        raise Refused(f"{when!r} is not a time like 2026-11-27T21:30:00Z")
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    source = f"{name}-{table}"
    target = f"{source}-restored-{at.astimezone(timezone.utc):%Y%m%dT%H%MZ}"
    ddb = aws("dynamodb")
    ddb.restore_table_to_point_in_time(SourceTableName=source, TargetTableName=target,
                                       RestoreDateTime=at, BillingModeOverride="PAY_PER_REQUEST")
    say(f"{target}: restoring {source} as of {at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC")
    say(f"when it is ACTIVE, read it, then: infra/stack.py copy-items {env} {target} {table} [<pk>]")


def cmd_copy_items(env, source, table, partition):
    name, region = environment(env)
    aws = Aws(region)
    target = f"{name}-{table}"
    if source == target:
        raise Refused("the source is the live table itself")
    ddb = aws("dynamodb")
    status = ddb.describe_table(TableName=source)["Table"]["TableStatus"]
    if status != "ACTIVE":
        raise Refused(f"{source} is {status}; wait until it is ACTIVE")
    if partition:
        pages = ddb.get_paginator("query").paginate(
            TableName=source, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": partition}})
    else:
        pages = ddb.get_paginator("scan").paginate(TableName=source)
    copied = 0
    for page in pages:
        items = page["Items"]
        for i in range(0, len(items), 25):
            requests = [{"PutRequest": {"Item": item}} for item in items[i:i + 25]]
            while requests:
                answer = ddb.batch_write_item(RequestItems={target: requests})
                requests = answer.get("UnprocessedItems", {}).get(target, [])
                if requests:
                    time.sleep(0.2)
        copied += len(items)
    say(f"{target}: {copied} item(s) written from {source}" + (f" (partition {partition})" if partition else ""))


# ---- the rest


def cmd_continue_rollback(env):
    name, region = environment(env)
    aws = Aws(region)
    aws("cloudformation").continue_update_rollback(StackName=name)
    say(f"stack {name}: rollback continued (watch it in the CloudFormation console)")


def cmd_alarm_topic(env, email):
    name, region = environment(env)
    aws = Aws(region)
    sns = aws("sns")
    arn = sns.create_topic(Name=f"{name}-alarms")["TopicArn"]
    sns.subscribe(TopicArn=arn, Protocol="email", Endpoint=email)
    say(f"{arn}")
    say(f"confirm the subscription from {email}'s inbox, then set AlarmTopicArn={arn} in [{env}.deploy.parameters]")


def main(argv):
    usage = __doc__.split("\n\n")[1]
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    flags = {a for a in args if a.startswith("--")}
    words = [a for a in args if not a.startswith("--")]
    known = {"teardown": {"--with-data", "--yes"}}.get(command, set())
    if flags - known:
        raise Refused(f"{command}: unknown option {sorted(flags - known)[0]}")
    wanted = {"outputs": 1, "teardown": 1, "redrive": 2, "continue-rollback": 1, "alarm-topic": 2,
              "restore-table": 3, "copy-items": 3}
    if command not in wanted:
        print(usage, file=sys.stderr)
        return 2
    optional = 1 if command == "copy-items" else 0
    if not wanted[command] <= len(words) <= wanted[command] + optional:
        line = next(line for line in usage.splitlines() if f"stack.py {command} " in line)
        raise Refused(f"usage: {line.split('#')[0].strip()}")
    if command == "outputs":
        cmd_outputs(words[0])
    elif command == "teardown":
        cmd_teardown(words[0], "--with-data" in flags, "--yes" in flags)
    elif command == "redrive":
        cmd_redrive(words[0], words[1])
    elif command == "restore-table":
        cmd_restore_table(*words)
    elif command == "copy-items":
        cmd_copy_items(words[0], words[1], words[2], words[3] if len(words) > 3 else None)
    elif command == "continue-rollback":
        cmd_continue_rollback(words[0])
    else:
        cmd_alarm_topic(words[0], words[1])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refused as e:
        print(f"stack: {' '.join(str(e).split())}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("stack: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - the SDK's errors say what went wrong
        # On one line: some carry a whole response body with its line breaks.
        print(f"stack: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        sys.exit(1)
