#!/usr/bin/env python3
"""The SAM template as CloudFormation reads it, for every parameter set an operator deploys.

cfn-lint on `template.yaml` checks the source; CloudFormation checks what the SAM transform
makes of it, after the conditions are resolved for the stack's parameters. This program runs
the SAM translator (PyPI `aws-sam-translator`, with a fake region and account: no network) over
the template for each parameter set: the defaults, `PublicUrl` set, `DomainName` with
`CertificateArn` set, each allowed `Architecture`, and each environment's deploy
`parameter_overrides` in `infra/samconfig.toml`. For each set it fails on

- a dependency cycle among the created resources (edges from `Ref`, `Fn::GetAtt`, the
  `${X}` and `${X.Attr}` of `Fn::Sub` strings and `DependsOn`, through the branch of each
  `Fn::If` that the set takes, between resources whose `Condition` holds): CloudFormation
  refuses such a stack before it creates anything;
- a reference to a resource, parameter or condition the template does not define (in any
  branch), or, on a taken branch, to a resource that the set does not create;
- a cfn-lint error or warning on the transformed template (see `IGNORED_WARNINGS`).

    check_transform.py [--template template.yaml] [--samconfig infra/samconfig.toml]

Exit status 0 when every set passes; 1 with one line per problem, each naming the parameter
set and the resources or the missing name.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import boto3
import networkx
from cfnlint.api import lint
from cfnlint.config import ManualArgs
from cfnlint.decode.decode import decode_str
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
ACCOUNT = "123456789012"
PSEUDO_PARAMETERS = {
    "AWS::AccountId",
    "AWS::NotificationARNs",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
}
# The pseudo parameters' values the stack is checked in (conditions may compare them).
PSEUDO_VALUES = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::StackName": "paddock-check",
    "AWS::URLSuffix": "amazonaws.com",
}
# Operator-like values for the parameters a set turns on (any well-formed value does: the
# check is about which resources and branches exist, not about the values).
EXAMPLE_PUBLIC_URL = "https://paddock.example.com"
EXAMPLE_DOMAIN = "api.paddock.example.com"
EXAMPLE_CERTIFICATE = f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/0b5e1c2d-paddock-example"
# AWS managed policies a function may name by their bare name in `Policies`; the translator
# turns each into its ARN through this map (instead of asking IAM). A name missing here fails
# the transform, so a new one is added here on purpose.
MANAGED_POLICIES = {
    name: f"arn:aws:iam::aws:policy/{name}"
    for name in ("AWSLambdaBasicExecutionRole", "AWSXRayDaemonWriteAccess", "CloudWatchReadOnlyAccess")
}
# cfn-lint on the transformed template fails the check on every error and every warning but
# these. The test command already fails on any warning of cfn-lint on the source, and the
# translator is pinned, so a warning here comes from a change of the template: its author fixes
# it, or lists it here with the reason when it is the translator's own output (which the
# template cannot change). None is today. Informational findings are not reported.
IGNORED_WARNINGS: dict[str, str] = {}


@dataclass
class Reference:
    """One name a resource or output refers to, and where."""

    target: str
    path: str
    # False when the reference sits in the branch of an `Fn::If` the parameter set does not
    # take: CloudFormation still requires the name to exist, but makes no dependency of it.
    taken: bool


@dataclass
class ParameterSet:
    """The values a stack is deployed with, and what to call them in a message."""

    label: str
    values: dict[str, str]


@dataclass
class Outcome:
    """The problems of one parameter set, and its transformed template."""

    label: str
    problems: list[str] = field(default_factory=list)
    transformed: dict[str, Any] | None = None
    # How many resources the set creates (those whose Condition holds).
    created: int = 0


def load_template(text: str) -> dict[str, Any]:
    """The template as plain JSON data (the short `!Ref` forms in their long form)."""
    template, errors = decode_str(text)
    if errors or template is None:
        raise SystemExit("template.yaml does not parse: " + "; ".join(str(e) for e in errors))
    return json.loads(json.dumps(template))


def parameter_defaults(template: dict[str, Any]) -> dict[str, str]:
    """Every parameter's default; a parameter without one starts empty (the value
    `infra/samconfig.toml` gives it in every environment)."""
    return {
        name: str(spec.get("Default", ""))
        for name, spec in template.get("Parameters", {}).items()
    }


def samconfig_overrides(path: Path) -> dict[str, dict[str, str]]:
    """Each environment's deploy `parameter_overrides`, read as SAM CLI reads them (as
    `infra/deploy.sh --check-config` does)."""
    with path.open("rb") as f:
        settings = tomllib.load(f)
    environments = {}
    for env, sections in settings.items():
        if not isinstance(sections, dict):
            continue
        overrides = sections.get("deploy", {}).get("parameters", {}).get("parameter_overrides")
        if overrides is None:
            continue
        if isinstance(overrides, str):
            overrides = overrides.split()
        given = {}
        for item in overrides:
            m = re.fullmatch(
                r'([A-Za-z0-9]+)=(?:"((?:\\"|[^"])*)"|\'([^\']*)\'|([^\s"\'][^\s]*))', item.strip()
            )
            if not m:
                raise SystemExit(f"{path}: [{env}] parameter_overrides entry {item!r} is not Name=value")
            name, double, single, plain = m.groups()
            given[name] = (
                double.replace('\\"', '"') if double is not None else single if single is not None else plain
            )
        environments[env] = given
    return environments


def parameter_sets(template: dict[str, Any], samconfig: Path | None) -> list[ParameterSet]:
    """The parameter combinations an operator deploys with."""
    defaults = parameter_defaults(template)
    params = template.get("Parameters", {})

    def with_values(label: str, **values: str) -> ParameterSet:
        return ParameterSet(label, {**defaults, **values})

    sets = [with_values("defaults")]
    if "PublicUrl" in params:
        sets.append(with_values("PublicUrl set", PublicUrl=EXAMPLE_PUBLIC_URL))
    if "DomainName" in params:
        sets.append(
            with_values(
                "DomainName and CertificateArn set",
                DomainName=EXAMPLE_DOMAIN,
                CertificateArn=EXAMPLE_CERTIFICATE,
            )
        )
    for arch in params.get("Architecture", {}).get("AllowedValues", []):
        sets.append(with_values(f"Architecture={arch}", Architecture=arch))
    if samconfig is not None:
        for env, overrides in samconfig_overrides(samconfig).items():
            sets.append(ParameterSet(f"samconfig.toml environment {env}", {**defaults, **overrides}))
    return sets


def invalid_values(template: dict[str, Any], values: dict[str, str]) -> Iterator[str]:
    """Values CloudFormation would refuse for their parameter."""
    for name, spec in template.get("Parameters", {}).items():
        value = values.get(name, "")
        allowed = spec.get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            yield f"parameter {name}={value!r} is not one of {allowed}"
        pattern = spec.get("AllowedPattern")
        if pattern is not None and not re.fullmatch(pattern, value):
            yield f"parameter {name}={value!r} does not match {pattern!r}"
    for name in values:
        if name not in template.get("Parameters", {}):
            yield f"parameter {name} is set but the template has no such parameter"


def transform(template: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """What the SAM transform makes of `template` with `values`, offline."""
    session = boto3.session.Session(
        region_name=REGION, aws_access_key_id="offline", aws_secret_access_key="offline"
    )
    parameters = {**values, **PSEUDO_VALUES}
    packaged = copy.deepcopy(template)
    for name, body in packaged.get("Resources", {}).items():
        # What `sam package` does before CloudFormation sees the template: the local code
        # folder becomes an uploaded object.
        properties = body.get("Properties", {})
        if body.get("Type") == "AWS::Serverless::Function" and isinstance(properties.get("CodeUri"), str):
            properties["CodeUri"] = f"s3://paddock-check-artifacts/{name}.zip"
    translator = Translator(MANAGED_POLICIES, Parser(), boto_session=session)
    return translator.translate(packaged, parameter_values=parameters)


class Conditions:
    """The template's conditions, resolved for one set of parameter values."""

    def __init__(self, template: dict[str, Any], values: dict[str, str]):
        self.definitions = template.get("Conditions", {})
        self.values = {**PSEUDO_VALUES, **values}
        self.resolved: dict[str, bool] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.definitions

    def holds(self, name: str) -> bool:
        if name not in self.resolved:
            self.resolved[name] = self._evaluate(self.definitions[name])
        return self.resolved[name]

    def _evaluate(self, node: Any) -> bool:
        (fn, args), = node.items()
        if fn == "Condition":
            return self.holds(args)
        if fn == "Fn::Not":
            return not self._evaluate(args[0])
        if fn == "Fn::And":
            return all(self._evaluate(a) for a in args)
        if fn == "Fn::Or":
            return any(self._evaluate(a) for a in args)
        if fn == "Fn::Equals":
            return self._value(args[0]) == self._value(args[1])
        raise ValueError(f"condition function {fn} is not understood by this check")

    def _value(self, node: Any) -> str:
        if isinstance(node, dict) and set(node) == {"Ref"}:
            return self.values.get(node["Ref"], f"<{node['Ref']}>")
        if isinstance(node, dict):
            raise ValueError(f"condition value {node} is not understood by this check")
        return str(node).lower() if isinstance(node, bool) else str(node)


SUB_VARIABLE = re.compile(r"\$\{([^!}][^}]*)\}")


def references(node: Any, conditions: Conditions, path: str, taken: bool = True) -> Iterator[Reference]:
    """Every resource or parameter name `node` refers to; a missing condition name comes out
    as a reference to `Condition:<name>`."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from references(item, conditions, f"{path}[{i}]", taken)
        return
    if not isinstance(node, dict):
        return
    if len(node) == 1:
        (fn, args), = node.items()
        if fn == "Ref" and isinstance(args, str):
            yield Reference(args, path, taken)
            return
        if fn == "Fn::GetAtt":
            target = args.split(".", 1)[0] if isinstance(args, str) else args[0]
            if isinstance(target, str):
                yield Reference(target, path, taken)
            return
        if fn == "Fn::Sub":
            text, variables = (args, {}) if isinstance(args, str) else (args[0], args[1])
            for name in SUB_VARIABLE.findall(text):
                name = name.strip()
                if name not in variables:
                    yield Reference(name.split(".", 1)[0], path, taken)
            yield from references(variables, conditions, f"{path}.Fn::Sub", taken)
            return
        if fn == "Fn::If" and isinstance(args, list) and len(args) == 3:
            name = args[0]
            if name not in conditions:
                yield Reference(f"Condition:{name}", path, taken)
                for i, branch in enumerate(args[1:], start=1):
                    yield from references(branch, conditions, f"{path}.Fn::If[{i}]", False)
                return
            chosen = 1 if conditions.holds(name) else 2
            for i in (1, 2):
                yield from references(args[i], conditions, f"{path}.Fn::If[{i}]", taken and i == chosen)
            return
    for key, value in node.items():
        yield from references(value, conditions, f"{path}.{key}", taken)


def graph_problems(template: dict[str, Any], values: dict[str, str]) -> tuple[list[str], int]:
    """Cycles among, and dangling references from, the resources and outputs of a
    transformed template under `values`; and how many resources it creates."""
    problems = []
    conditions = Conditions(template, values)
    resources = template.get("Resources", {})
    parameters = set(template.get("Parameters", {}))

    def absent(condition: str | None) -> str | None:
        """Why something with `condition` is not created, or None when it is."""
        if condition is None:
            return None
        if condition not in conditions:
            return f"its Condition {condition} is not defined"
        return None if conditions.holds(condition) else f"its Condition {condition} is false"

    created = {name for name, body in resources.items() if absent(body.get("Condition")) is None}
    for name, body in resources.items():
        condition = body.get("Condition")
        if condition is not None and condition not in conditions:
            problems.append(f"{name} has Condition {condition}, which is not defined")

    def refs_of(owner: str, body: dict[str, Any], parts: tuple[str, ...]) -> Iterator[Reference]:
        for part in parts:
            if part in body:
                yield from references(body[part], conditions, f"{owner}.{part}")
        depends = body.get("DependsOn", [])
        for target in [depends] if isinstance(depends, str) else depends:
            yield Reference(target, f"{owner}.DependsOn", True)

    def dangling(owner: str, ref: Reference) -> str | None:
        if ref.target.startswith("Condition:"):
            return f"{owner} uses condition {ref.target.removeprefix('Condition:')}, which is not defined (at {ref.path})"
        if ref.target not in resources and ref.target not in parameters and ref.target not in PSEUDO_PARAMETERS:
            return f"{owner} refers to {ref.target}, which is not a resource, parameter or pseudo parameter (at {ref.path})"
        if ref.taken and ref.target in resources and ref.target not in created:
            why = absent(resources[ref.target].get("Condition"))
            return f"{owner} refers to {ref.target}, which this parameter set does not create ({why}) (at {ref.path})"
        return None

    edges = networkx.DiGraph()
    edges.add_nodes_from(created)
    for name in sorted(created):
        body = resources[name]
        for ref in refs_of(name, body, ("Properties", "UpdatePolicy", "CreationPolicy", "UpdateReplacePolicy", "DeletionPolicy")):
            problem = dangling(name, ref)
            if problem:
                problems.append(problem)
            elif ref.taken and ref.target in created and not edges.has_edge(name, ref.target):
                edges.add_edge(name, ref.target, at=ref.path)
    for name, output in template.get("Outputs", {}).items():
        if absent(output.get("Condition")) is not None:
            continue
        for ref in references(output.get("Value"), conditions, f"Outputs.{name}.Value"):
            problem = dangling(f"output {name}", ref)
            if problem:
                problems.append(problem)

    for component in networkx.strongly_connected_components(edges):
        members = sorted(component)
        if len(members) == 1 and not edges.has_edge(members[0], members[0]):
            continue
        cycle = networkx.find_cycle(edges.subgraph(members), source=members[0])
        route = " -> ".join([a for a, _ in cycle] + [cycle[0][0]])
        where = "; ".join(f"{a} refers to {b} at {edges.edges[a, b]['at']}" for a, b in cycle)
        problems.append(
            f"dependency cycle among {', '.join(members)}: {route} ({where}); "
            "CloudFormation refuses the stack before creating anything"
        )
    return problems, len(created)


def lint_problems(transformed: dict[str, Any]) -> list[str]:
    """cfn-lint's errors and warnings (but IGNORED_WARNINGS) on a transformed template."""
    matches = lint(json.dumps(transformed, indent=1), config=ManualArgs(regions=[REGION]))
    problems = []
    for m in matches:
        rule = m.rule.id
        if rule.startswith("E") or (rule.startswith("W") and rule not in IGNORED_WARNINGS):
            where = "/".join(str(p) for p in m.path) if getattr(m, "path", None) else f"line {m.linenumber}"
            problems.append(f"cfn-lint {rule} at {where}: {m.message}")
    return problems


def check(template: dict[str, Any], sets: list[ParameterSet], run_lint: bool = True) -> list[Outcome]:
    """Each parameter set's problems; cfn-lint runs once per distinct transformed template."""
    outcomes = []
    linted: dict[str, list[str]] = {}
    for parameter_set in sets:
        outcome = Outcome(parameter_set.label)
        outcomes.append(outcome)
        outcome.problems.extend(invalid_values(template, parameter_set.values))
        try:
            outcome.transformed = transform(template, parameter_set.values)
        except Exception as e:  # the translator's own errors name the resource and the rule
            outcome.problems.append(f"the SAM transform fails: {e}")
            continue
        problems, outcome.created = graph_problems(outcome.transformed, parameter_set.values)
        outcome.problems.extend(problems)
        if run_lint:
            key = json.dumps(outcome.transformed, sort_keys=True)
            if key not in linted:
                linted[key] = lint_problems(outcome.transformed)
            outcome.problems.extend(linted[key])
    return outcomes


def main() -> int:
    # The translator logs its usage metrics, which nothing here publishes.
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    parser.add_argument("--samconfig", type=Path, default=ROOT / "infra" / "samconfig.toml")
    args = parser.parse_args()
    template = load_template(args.template.read_text(encoding="utf-8"))
    sets = parameter_sets(template, args.samconfig)
    failed = False
    for outcome in check(template, sets):
        if outcome.problems:
            failed = True
            for problem in outcome.problems:
                print(f"{args.template.name} [{outcome.label}]: {problem}")
        else:
            print(f"{args.template.name} [{outcome.label}]: {outcome.created} resources created, no cycle, no dangling reference, lint clean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
