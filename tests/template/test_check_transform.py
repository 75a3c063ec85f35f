#!/usr/bin/env python3
"""Templates the transform check must refuse, made on the fly from `template.yaml`: each
case changes one thing of the real template and expects the problem named (the resources of
a cycle, the missing name, the parameter set). cfn-lint runs on the real template in the real
check; here only on a small one.

    test_check_transform.py [-v]
"""

from __future__ import annotations

import copy
import logging
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_transform as check  # noqa: E402

TEMPLATE = check.load_template((check.ROOT / "template.yaml").read_text(encoding="utf-8"))


def problems(template: dict, *only: str) -> dict[str, list[str]]:
    """Each parameter set's problems (the sets of `template` itself, without samconfig.toml's
    environments), or only those of the sets labelled `only`."""
    sets = check.parameter_sets(template, None)
    if only:
        sets = [s for s in sets if s.label in only]
    return {o.label: o.problems for o in check.check(template, sets, run_lint=False)}


def auth_variables(template: dict) -> dict:
    return template["Resources"]["AuthFunction"]["Properties"]["Environment"]["Variables"]


class RefusedTemplates(unittest.TestCase):
    def test_the_auth_function_referring_to_the_http_api_is_a_cycle_naming_both(self):
        template = copy.deepcopy(TEMPLATE)
        auth_variables(template)["Auth__PublicUrl"] = {
            "Fn::If": [
                "HasPublicUrl",
                {"Ref": "PublicUrl"},
                {
                    "Fn::If": [
                        "HasDomain",
                        {"Fn::Sub": "https://${DomainName}"},
                        {"Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"},
                    ]
                },
            ]
        }
        found = problems(template, "defaults", "PublicUrl set", "DomainName and CertificateArn set")
        cycles = [p for p in found["defaults"] if "dependency cycle" in p]
        self.assertEqual(len(cycles), 1, found["defaults"])
        self.assertIn("AuthFunction -> HttpApi -> AuthFunction", cycles[0])
        self.assertIn("Auth__PublicUrl", cycles[0])
        # The branches the other sets take do not name the API: no cycle there.
        self.assertEqual(found["PublicUrl set"], [])
        self.assertEqual(found["DomainName and CertificateArn set"], [])

    def test_a_cycle_through_depends_on_and_get_att_in_a_sub_is_found(self):
        template = copy.deepcopy(TEMPLATE)
        template["Resources"]["TrackMapsQueue"]["DependsOn"] = "FeedQueue"
        template["Resources"]["FeedQueue"]["Properties"]["Tags"] = [
            {"Key": "after", "Value": {"Fn::Sub": "${TrackMapsQueue.Arn}"}}
        ]
        found = problems(template, "defaults")["defaults"]
        self.assertTrue(
            any("dependency cycle among FeedQueue, TrackMapsQueue" in p for p in found), found
        )

    def test_a_reference_to_a_resource_that_does_not_exist_names_it(self):
        template = copy.deepcopy(TEMPLATE)
        auth_variables(template)["Extra__Table"] = {"Ref": "NoSuchTable"}
        auth_variables(template)["Extra__Queue"] = {"Fn::Sub": "${NoSuchQueue.Arn}/x"}
        auth_variables(template)["Extra__Topic"] = {"Fn::GetAtt": ["NoSuchTopic", "TopicName"]}
        found = problems(template, "defaults")["defaults"]
        for missing in ("NoSuchTable", "NoSuchQueue", "NoSuchTopic"):
            self.assertTrue(
                any(f"AuthFunction refers to {missing}, which is not a resource" in p for p in found),
                (missing, found),
            )

    def test_a_missing_name_in_a_branch_not_taken_is_still_refused(self):
        template = copy.deepcopy(TEMPLATE)
        auth_variables(template)["Extra"] = {"Fn::If": ["HasDomain", {"Ref": "NoSuchDomain"}, ""]}
        found = problems(template, "defaults")["defaults"]
        self.assertTrue(any("NoSuchDomain" in p for p in found), found)

    def test_a_reference_to_a_resource_the_parameter_set_does_not_create_names_it_and_the_condition(self):
        template = copy.deepcopy(TEMPLATE)
        auth_variables(template)["Extra__Domain"] = {"Ref": "ApiDomainName"}
        found = problems(template, "defaults", "DomainName and CertificateArn set")
        self.assertTrue(
            any(
                "AuthFunction refers to ApiDomainName, which this parameter set does not create "
                "(its Condition HasDomain is false)" in p
                for p in found["defaults"]
            ),
            found["defaults"],
        )
        self.assertEqual(found["DomainName and CertificateArn set"], [])

    def test_an_undefined_condition_is_named(self):
        template = copy.deepcopy(TEMPLATE)
        auth_variables(template)["Extra"] = {"Fn::If": ["HasNoSuchThing", "a", "b"]}
        found = problems(template, "defaults")["defaults"]
        self.assertTrue(any("condition HasNoSuchThing, which is not defined" in p for p in found), found)

    def test_an_output_referring_to_nothing_is_named(self):
        template = copy.deepcopy(TEMPLATE)
        template["Outputs"]["Extra"] = {"Value": {"Ref": "NoSuchBucket"}}
        found = problems(template, "defaults")["defaults"]
        self.assertTrue(any("output Extra refers to NoSuchBucket" in p for p in found), found)


class Lint(unittest.TestCase):
    def test_cfn_lint_errors_and_warnings_of_the_transformed_template_are_named(self):
        # A small template: cfn-lint's verdict on the whole one is the real check's.
        template = {
            "AWSTemplateFormatVersion": "2010-09-09",
            "Conditions": {"Unused": {"Fn::Equals": ["a", "b"]}},
            "Resources": {
                "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": "soon"}}
            },
        }
        found = check.lint_problems(template)
        self.assertTrue(any(p.startswith("cfn-lint E") and "VisibilityTimeout" in p for p in found), found)
        self.assertTrue(any(p.startswith("cfn-lint W") and "Unused" in p for p in found), found)


class ParameterSets(unittest.TestCase):
    def test_every_allowed_architecture_and_each_samconfig_environment_is_a_set(self):
        config = (
            'version = 0.1\n[dev.deploy.parameters]\nparameter_overrides = [\n'
            '  "Architecture=x86_64",\n  "PublicUrl=\\"\\"",\n'
            "  \"AuthProviders='{\\\"google\\\": {\\\"clientId\\\": \\\"1.apps\\\"}}'\",\n]\n"
            '[dev.build.parameters]\nparameter_overrides = ["Architecture=x86_64"]\n'
        )
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
            f.write(config)
            f.flush()
            sets = {s.label: s.values for s in check.parameter_sets(TEMPLATE, Path(f.name))}
        self.assertIn("Architecture=arm64", sets)
        self.assertIn("Architecture=x86_64", sets)
        dev = sets["samconfig.toml environment dev"]
        self.assertEqual(dev["Architecture"], "x86_64")
        self.assertEqual(dev["PublicUrl"], "")
        self.assertEqual(dev["AuthProviders"], '{"google": {"clientId": "1.apps"}}')

    def test_a_value_the_template_does_not_allow_is_refused(self):
        values = {**check.parameter_defaults(TEMPLATE), "Architecture": "sparc", "NoSuchParameter": "x"}
        found = list(check.invalid_values(TEMPLATE, values))
        self.assertTrue(any("Architecture='sparc'" in p for p in found), found)
        self.assertTrue(any("NoSuchParameter" in p for p in found), found)


if __name__ == "__main__":
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    unittest.main()
