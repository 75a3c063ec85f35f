#!/usr/bin/env python3
"""Stacks on moto's CloudFormation shaped like Paddock's where the operator's scripts look:
retained tables with deletion protection, a versioned bucket holding several versions of an
object and a delete marker, retained log groups, a queue with its dead-letter queue, and the
outputs the scripts read. moto does not run the SAM transform, so the stack is this template,
not template.yaml; nor does its CloudFormation create a Secrets Manager secret (the resource
gets no id) or apply a bucket's versioning (set here after the stack is created), so the app
secret is left out.

    stack_fixture.py create <stack>       # creates the stack and puts data in it
    stack_fixture.py inventory <stack>    # JSON: which of its resources exist now
    stack_fixture.py dead-letters <stack> <n>   # n messages into its track-maps dead-letter queue
    stack_fixture.py depths <stack>       # JSON: messages in the queue and the dead-letter queue
    stack_fixture.py items <table>        # JSON: the table's items' keys
    stack_fixture.py delete-item <table> <pk> <sk>
"""

import json
import sys

import boto3


def template(stack):
    table = lambda name: {  # noqa: E731
        "Type": "AWS::DynamoDB::Table",
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "TableName": f"{stack}-{name}",
            "BillingMode": "PAY_PER_REQUEST",
            "DeletionProtectionEnabled": True,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                     {"AttributeName": "sk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
        },
    }
    log_group = lambda function: {  # noqa: E731
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Retain",
        "Properties": {"LogGroupName": f"/aws/lambda/{stack}-{function}", "RetentionInDays": 30},
    }
    return {
        "Resources": {
            "UsersTable": table("users"),
            "SessionsTable": table("sessions"),
            "BlobBucket": {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Retain",
                           "Properties": {"VersioningConfiguration": {"Status": "Enabled"}}},
            "AuthFunctionLogGroup": log_group("AuthFunction"),
            "FeedFunctionLogGroup": log_group("FeedFunction"),
            "TrackMapsDeadLetterQueue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": f"{stack}-track-maps-dlq"}},
            "TrackMapsQueue": {"Type": "AWS::SQS::Queue", "Properties": {
                "QueueName": f"{stack}-track-maps",
                "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": ["TrackMapsDeadLetterQueue", "Arn"]},
                                  "maxReceiveCount": 5}}},
        },
        "Outputs": {
            "BlobBucketName": {"Value": {"Ref": "BlobBucket"}},
            "TrackMapsQueueUrl": {"Value": {"Ref": "TrackMapsQueue"}},
            "TrackMapsDeadLetterQueueUrl": {"Value": {"Ref": "TrackMapsDeadLetterQueue"}},
        },
    }


def outputs(stack):
    s = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in s.get("Outputs", [])}


def create(stack):
    boto3.client("cloudformation").create_stack(StackName=stack, TemplateBody=json.dumps(template(stack)))
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName=f"{stack}-users", Item={"pk": {"S": "USER#1"}, "sk": {"S": "PROFILE"}})
    s3 = boto3.client("s3")
    bucket = outputs(stack)["BlobBucketName"]
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"one", b"two"):
        s3.put_object(Bucket=bucket, Key="packs/a.zip", Body=body)
    s3.put_object(Bucket=bucket, Key="tracks/b.bin", Body=b"points")
    s3.delete_object(Bucket=bucket, Key="tracks/b.bin")  # leaves a delete marker and a version


def inventory(stack):
    out = {}
    out["tables"] = sorted(t for t in boto3.client("dynamodb").list_tables()["TableNames"]
                           if t in (f"{stack}-users", f"{stack}-sessions"))
    ddb = boto3.client("dynamodb")
    out["protected"] = sorted(t for t in out["tables"]
                              if ddb.describe_table(TableName=t)["Table"].get("DeletionProtectionEnabled"))
    out["log_groups"] = sorted(g["logGroupName"] for g in boto3.client("logs").describe_log_groups()["logGroups"]
                               if g["logGroupName"] in (f"/aws/lambda/{stack}-AuthFunction", f"/aws/lambda/{stack}-FeedFunction"))
    buckets = [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]
    try:
        bucket = outputs(stack)["BlobBucketName"]
        out["stack"] = True
    except Exception:  # noqa: BLE001 - the stack is gone
        bucket = None
        out["stack"] = False
    out["buckets"] = [b for b in buckets if b == bucket] if bucket else []
    # Every bucket name with the stack's name as a prefix, to see which survive.
    out["bucket_names"] = sorted(buckets)
    print(json.dumps(out, sort_keys=True))


def dead_letters(stack, n):
    sqs = boto3.client("sqs")
    dlq = outputs(stack)["TrackMapsDeadLetterQueueUrl"]
    for i in range(n):
        sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({"id": f"event-{i}"}),
                         MessageAttributes={"kind": {"DataType": "String", "StringValue": "session.uploaded"}})


def depths(stack):
    sqs = boto3.client("sqs")
    o = outputs(stack)
    count = lambda url: int(sqs.get_queue_attributes(  # noqa: E731
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"])
    depth = {"queue": count(o["TrackMapsQueueUrl"]), "dead_letters": count(o["TrackMapsDeadLetterQueueUrl"])}
    bodies, kinds = [], set()
    while True:
        got = sqs.receive_message(QueueUrl=o["TrackMapsQueueUrl"], MaxNumberOfMessages=10, VisibilityTimeout=60,
                                  MessageAttributeNames=["All"]).get("Messages", [])
        if not got:
            break
        bodies += [m["Body"] for m in got]
        kinds |= {m.get("MessageAttributes", {}).get("kind", {}).get("StringValue") for m in got}
    print(json.dumps({**depth, "bodies": sorted(bodies), "kinds": sorted(k for k in kinds if k)}))


def items(table):
    found = boto3.client("dynamodb").scan(TableName=table)["Items"]
    print(json.dumps(sorted([i["pk"]["S"], i["sk"]["S"]] for i in found)))


if __name__ == "__main__":
    command, stack = sys.argv[1], sys.argv[2]
    if command == "create":
        create(stack)
    elif command == "inventory":
        inventory(stack)
    elif command == "dead-letters":
        dead_letters(stack, int(sys.argv[3]))
    elif command == "depths":
        depths(stack)
    elif command == "items":
        items(stack)
    elif command == "delete-item":
        boto3.client("dynamodb").delete_item(TableName=stack, Key={"pk": {"S": sys.argv[3]}, "sk": {"S": sys.argv[4]}})
        print("null")
    else:
        sys.exit(f"unknown command {command}")
