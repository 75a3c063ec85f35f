#!/usr/bin/env python3
"""Each function's IAM policy as the deployed stack gives it, for the local API to enforce.

Runs the SAM transform (as `check_transform.py` does: offline, the pinned translator) over the
template with its default parameters, takes each `AWS::Serverless::Function`'s role from the
transformed template (policy templates expanded, inline statements, managed policies) and
resolves every intrinsic function in its statements: parameters, pseudo parameters and
conditions to their values, and references to the stack's resources to `${Logical}` and
`${Logical.Attr}` placeholders (`${UsersTable.Arn}`), which the local API replaces with the
names of its own tables, bucket, queues and secret. Writes JSON:

    {"region": ..., "account": ...,
     "resources": {"UsersTable": {"type": "AWS::DynamoDB::Table", "name": "users"}, ...},
     "functions": {"paddock-auth": {"logicalId": "AuthFunction",
                                    "statements": [{"id", "effect", "actions", "resources",
                                                    "condition"}]}}}

    function_policies.py [--template template.yaml] [--out FILE]

A statement this cannot resolve (an unknown intrinsic, `NotAction`, a managed policy it does
not know) is an error naming the function: the local API must not enforce less than IAM would.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import check_transform as ct

# Managed policies the transform attaches. CloudWatch Logs and X-Ray: Lambda ships the function's
# logs and traces, the code calls neither, so nothing of them is enforced. The event source
# mappings' policies: Lambda's poller reads the stream or queue with them, and the function's own
# code also deletes a message it moved to the dead-letter queue, so their statements are
# enforced as AWS writes them (ids `managed:<name>#<n>`; the policy check does not require them
# to be used). Any other managed policy is an error until its statements are here or inline.
UNENFORCED_MANAGED = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}
MANAGED_STATEMENTS = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole": [
        (["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"], ["*"]),
    ],
    "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole": [
        (
            ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"],
            ["*"],
        ),
    ],
}
# The stack's resources a policy may name, by type: the local API knows how to name each.
RESOURCE_TYPES = {
    "AWS::DynamoDB::Table",
    "AWS::SQS::Queue",
    "AWS::S3::Bucket",
    "AWS::SecretsManager::Secret",
}
SUB_PART = re.compile(r"\$\{([^!}][^}]*)\}")


class Unresolvable(Exception):
    """A part of a policy this cannot turn into what IAM would see."""


class Resolver:
    """Intrinsic functions of one transformed template under one set of parameter values."""

    def __init__(self, source: dict[str, Any], transformed: dict[str, Any], values: dict[str, str]):
        self.conditions = ct.Conditions(source, values)
        self.values = {**ct.PSEUDO_VALUES, **values}
        self.resources = transformed.get("Resources", {})

    def name(self, ref: str) -> str:
        if ref in self.values and ref != "AWS::StackName":
            return self.values[ref]
        body = self.resources.get(ref.split(".", 1)[0])
        if body is None:
            raise Unresolvable(f"a reference to {ref}, which is neither a parameter nor a resource")
        if body.get("Type") not in RESOURCE_TYPES:
            raise Unresolvable(f"a reference to {ref} ({body.get('Type')}), which the local API cannot name")
        return "${" + ref + "}"

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.value(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, args), = node.items()
            if fn == "Ref":
                return NO_VALUE if args == "AWS::NoValue" else self.name(args)
            if fn == "Fn::GetAtt":
                target, attribute = args.split(".", 1) if isinstance(args, str) else args
                return self.name(f"{target}.{attribute}")
            if fn == "Fn::Sub":
                text, variables = (args, {}) if isinstance(args, str) else (args[0], args[1])
                variables = {k: self.value(v) for k, v in variables.items()}

                def part(match: re.Match[str]) -> str:
                    key = match.group(1).strip()
                    return str(variables[key]) if key in variables else self.name(key)

                return SUB_PART.sub(part, text)
            if fn == "Fn::If":
                condition, yes, no = args
                return self.value(yes if self.conditions.holds(condition) else no)
            if fn == "Fn::Join":
                separator, parts = args
                return separator.join(str(p) for p in self.value(parts))
            if fn.startswith("Fn::"):
                raise Unresolvable(f"{fn} is not understood here")
        return {k: v for k, v in ((k, self.value(v)) for k, v in node.items()) if v is not NO_VALUE}


NO_VALUE = object()


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def function_policies(source: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    transformed = ct.transform(source, values)
    resolver = Resolver(source, transformed, values)
    functions: dict[str, Any] = {}
    for logical, body in source.get("Resources", {}).items():
        if body.get("Type") != "AWS::Serverless::Function":
            continue
        binary = body["Metadata"]["BuildProperties"]["Binary"]
        role_ref = transformed["Resources"][logical]["Properties"]["Role"]
        role_name = role_ref["Fn::GetAtt"][0] if isinstance(role_ref, dict) else None
        if role_name is None:
            raise Unresolvable(f"{logical}: its Role is not one the stack makes")
        role = transformed["Resources"][role_name]["Properties"]
        statements = []
        for arn in role.get("ManagedPolicyArns", []):
            if arn in UNENFORCED_MANAGED:
                continue
            if arn not in MANAGED_STATEMENTS:
                raise Unresolvable(f"{logical}: the managed policy {arn} is not known here; write its statements inline")
            for n, (actions, resources) in enumerate(MANAGED_STATEMENTS[arn]):
                statements.append(
                    {
                        "id": f"managed:{arn.rsplit('/', 1)[1]}#{n}",
                        "effect": "Allow",
                        "actions": actions,
                        "resources": resources,
                        "condition": {},
                    }
                )
        for policy in role.get("Policies", []):
            document = resolver.value(policy["PolicyDocument"])
            for n, statement in enumerate(as_list(document["Statement"])):
                unknown = set(statement) - {"Effect", "Action", "Resource", "Condition", "Sid"}
                if unknown:
                    raise Unresolvable(f"{logical}: {', '.join(sorted(unknown))} in a statement is not enforced here")
                statements.append(
                    {
                        "id": f"{policy['PolicyName']}#{n}",
                        "effect": statement["Effect"],
                        "actions": as_list(statement["Action"]),
                        "resources": as_list(statement["Resource"]),
                        "condition": statement.get("Condition", {}),
                    }
                )
        functions[binary] = {"logicalId": logical, "statements": statements}
    resources = {}
    for logical, body in transformed["Resources"].items():
        if body.get("Type") not in RESOURCE_TYPES:
            continue
        entry: dict[str, Any] = {"type": body["Type"]}
        if body["Type"] == "AWS::DynamoDB::Table":
            name = body["Properties"]["TableName"]
            text = name["Fn::Sub"] if isinstance(name, dict) else name
            prefix = "${AWS::StackName}-"
            if not isinstance(text, str) or not text.startswith(prefix):
                raise Unresolvable(f"{logical}: its TableName is not {prefix}<name>")
            entry["name"] = text[len(prefix):]
        resources[logical] = entry
    return {"region": ct.REGION, "account": ct.ACCOUNT, "resources": resources, "functions": functions}


def main() -> int:
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", type=Path, default=ct.ROOT / "template.yaml")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    source = ct.load_template(args.template.read_text(encoding="utf-8"))
    try:
        policies = function_policies(source, ct.parameter_defaults(source))
    except Unresolvable as e:
        print(f"{args.template.name}: {e}", file=sys.stderr)
        return 1
    text = json.dumps(policies, indent=1, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
