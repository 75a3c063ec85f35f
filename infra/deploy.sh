#!/usr/bin/env bash
# Builds and deploys one environment of infra/samconfig.toml, so that what `sam deploy` ships
# is what infra/sam-build.sh built:
#
#   infra/deploy.sh dev             # build for dev's Architecture, check, deploy paddock-dev,
#                                   # then smoke-test it (infra/smoke.sh <ApiUrl>)
#   infra/deploy.sh prod            # the same for the drivers' stack (shows the change set first)
#   infra/deploy.sh --plan dev      # print the build and deploy commands, run nothing
#   infra/deploy.sh --check-config dev     # every parameter set, to a value CloudFormation accepts
#   infra/deploy.sh --check-build .aws-sam/build-arm64   # every function's CodeUri holds a bootstrap
#
# The environment's `Architecture` (in its deploy parameter_overrides) picks the build:
# infra/sam-build.sh <arch> builds into .aws-sam/build-<arch>, and `sam deploy` is given that
# build's template explicitly. Without --template-file, SAM CLI would deploy
# .aws-sam/build/template.yaml when it exists, else the top-level template.yaml, whose CodeUri
# folders are sources without a bootstrap: functions that cannot start.
#
# Every parameter comes from samconfig.toml; nothing is overridden on the command line (a
# --parameter-overrides there replaces the file's whole list). PADDOCK_SAMCONFIG names another
# settings file (default infra/samconfig.toml).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
config=${PADDOCK_SAMCONFIG:-infra/samconfig.toml}

usage() {
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Checks that the env's deploy parameter_overrides set every parameter of template.yaml (and
# no unknown one), then prints the env's Architecture.
check_config() { # env
  python3 - "$root/template.yaml" "$config" "$1" <<'PY'
import re, sys, tomllib

template, config, env = sys.argv[1:4]
# Each parameter with the constraints CloudFormation checks before it creates anything
# (AllowedValues, AllowedPattern, MinValue), read line by line (no YAML library needed).
params, spec, inside, current, in_allowed = [], {}, False, None, False
for line in open(template, encoding="utf-8"):
    if re.match(r"^Parameters:\s*$", line):
        inside = True
        continue
    if inside and re.match(r"^\S", line) and not line.startswith("#"):
        break
    if not inside:
        continue
    m = re.match(r"^  ([A-Za-z0-9]+):\s*$", line)
    if m:
        current = m.group(1)
        params.append(current)
        spec[current] = {}
        in_allowed = False
        continue
    m = re.match(r"^    ([A-Za-z]+):\s*(.*?)\s*$", line)
    if m and current:
        key, value = m.groups()
        in_allowed = key == "AllowedValues"
        if in_allowed:
            spec[current]["allowed"] = []
        elif key == "AllowedPattern":
            spec[current]["pattern"] = value.strip("\"'")
        elif key == "MinValue":
            spec[current]["min"] = float(value)
        continue
    m = re.match(r"^      - (.+?)\s*$", line)
    if m and current and in_allowed:
        spec[current]["allowed"].append(m.group(1).strip("\"'"))
try:
    with open(config, "rb") as f:
        settings = tomllib.load(f)
except OSError as e:
    sys.exit(f"{config}: {e.strerror}")
deploy = settings.get(env, {}).get("deploy", {}).get("parameters")
if deploy is None:
    sys.exit(f"{config}: no [{env}.deploy.parameters] (environments: {', '.join(k for k in settings if k != 'version')})")
overrides = deploy.get("parameter_overrides", [])
if isinstance(overrides, str):
    overrides = overrides.split()
# Each entry as SAM CLI reads it: Name=value without spaces, Name="..." (\" inside) or
# Name='...'. SAM CLI refuses a bare Name= (an empty value is Name="").
given = {}
for item in overrides:
    m = re.fullmatch(r'([A-Za-z0-9]+)=(?:"((?:\\"|[^"])*)"|\'([^\']*)\'|([^\s"\'][^\s]*))', item.strip())
    if not m:
        sys.exit(f"{config}: [{env}.deploy.parameters] parameter_overrides entry {item!r} is not "
                 "Name=value, Name=\"...\" or Name='...' (an empty value is Name=\"\")")
    name, double, single, plain = m.groups()
    given[name] = (double.replace('\\"', '"') if double is not None else single if single is not None else plain)
missing = [p for p in params if p not in given]
unknown = [g for g in given if g not in params]
if missing:
    sys.exit(f"{config}: [{env}.deploy.parameters] parameter_overrides lacks {', '.join(missing)} "
             "(list every parameter of template.yaml, empty where unused)")
if unknown:
    sys.exit(f"{config}: [{env}.deploy.parameters] parameter_overrides names {', '.join(unknown)}, "
             "not parameters of template.yaml")
# What CloudFormation would refuse after the build: a value outside the parameter's
# AllowedValues, AllowedPattern or MinValue, and the template's rule CertificateWithDomain.
where = f"{config}: [{env}.deploy.parameters]"
for name in params:
    value, rules = given[name], spec[name]
    if "allowed" in rules and value not in rules["allowed"]:
        sys.exit(f"{where} {name}={value!r} is not one of {', '.join(rules['allowed'])}")
    if "pattern" in rules and not re.fullmatch(rules["pattern"], value):
        sys.exit(f"{where} {name}={value!r} does not match the template's pattern {rules['pattern']}")
    if "min" in rules:
        try:
            number = float(value)
        except ValueError:
            sys.exit(f"{where} {name}={value!r} is not a number")
        if number < rules["min"]:
            sys.exit(f"{where} {name}={value!r} is below its minimum {rules['min']:g}")
if given.get("DomainName") and not given.get("CertificateArn"):
    sys.exit(f"{where} DomainName={given['DomainName']!r} needs CertificateArn (an ACM certificate for it "
             "in the stack's region): the template's rule CertificateWithDomain refuses it")
print(given["Architecture"])
PY
}

# Refuses a built template any of whose functions points at a folder without a bootstrap.
check_build() { # build dir
  python3 - "$1" <<'PY'
import os, re, sys

build = sys.argv[1]
template = os.path.join(build, "template.yaml")
if not os.path.isfile(template):
    sys.exit(f"{template}: not found (build first: infra/sam-build.sh <arch>)")
# A line-based read of SAM's output (two-space indents), so that no YAML library is needed:
# each resource's Type and CodeUri.
resources, name, inside = {}, None, False
for line in open(template, encoding="utf-8"):
    if re.match(r"^Resources:\s*$", line):
        inside = True
        continue
    if inside and re.match(r"^\S", line) and not line.startswith("#"):
        inside = False
    if not inside:
        continue
    m = re.match(r"^  ([A-Za-z0-9]+):\s*$", line)
    if m:
        name = m.group(1)
        resources[name] = {}
        continue
    m = re.match(r"^    Type:\s*['\"]?([A-Za-z0-9:]+)", line)
    if m and name:
        resources[name]["type"] = m.group(1)
    m = re.match(r"^      CodeUri:\s*['\"]?([^'\"#\s]+)", line)
    if m and name:
        resources[name]["code"] = m.group(1)
functions = {n: r.get("code") for n, r in resources.items() if r.get("type") == "AWS::Serverless::Function"}
if not functions:
    sys.exit(f"{template}: no AWS::Serverless::Function found")
bad = []
for fn, code in sorted(functions.items()):
    if code is None:
        bad.append(f"{fn} has no CodeUri")
        continue
    folder = code if os.path.isabs(code) else os.path.join(build, code)
    if not os.path.isfile(os.path.join(folder, "bootstrap")):
        bad.append(f"{fn}: {folder} holds no bootstrap")
if bad:
    print(f"{template} cannot be deployed:", file=sys.stderr)
    for b in bad:
        print(f"  {b}", file=sys.stderr)
    sys.exit(1)
print(f"{template}: {len(functions)} functions, each with its bootstrap")
PY
}

plan=false
case "${1:-}" in
  --check-config) [ $# -eq 2 ] || usage; cd "$root"; check_config "$2" >/dev/null; echo "$config [$2]: every parameter set"; exit 0 ;;
  --check-build) [ $# -eq 2 ] || usage; check_build "$2"; exit 0 ;;
  --plan) plan=true; shift ;;
  ""|-*) usage ;;
esac
[ $# -eq 1 ] || usage
env=$1

cd "$root"
arch=$(check_config "$env")
build_dir=".aws-sam/build-$arch"
deploy=(sam deploy --template-file "$build_dir/template.yaml" --config-file "$config" --config-env "$env")

if $plan; then
  echo "PADDOCK_SAM_ENV=$env infra/sam-build.sh $arch"
  echo "${deploy[*]}"
  exit 0
fi

echo "== $env: building for $arch"
PADDOCK_SAM_ENV=$env "$root/infra/sam-build.sh" "$arch"
echo "== checking $build_dir"
check_build "$build_dir"
echo "== ${deploy[*]}"
export PATH="${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}/lambda-venv/bin:$PATH" SAM_CLI_TELEMETRY=0
"${deploy[@]}"
echo
echo "== $env: the stack's outputs (ApiUrl, AppSecretArn, ...)"
# The environment's stack_name and region come from its [<env>.global.parameters].
outputs=$(sam list stack-outputs --config-file "$config" --config-env "$env" --output json)
api_url=$(printf '%s' "$outputs" | python3 -c 'import json, sys
outputs = {o["OutputKey"]: o["OutputValue"] for o in json.load(sys.stdin)}
for key in sorted(outputs):
    print(f"{key:<32} {outputs[key]}", file=sys.stderr)
print(outputs.get("ApiUrl", ""))')
[ -n "$api_url" ] || { echo "the stack has no ApiUrl output: nothing to smoke-test" >&2; exit 1; }
echo
echo "== $env: smoke test of $api_url"
# A throwaway driver walks the API and is deleted; a failing step fails the deploy's command
# (the stack stays deployed: roll back as docs/operating.md says, or fix forward).
"$root/infra/smoke.sh" "$api_url"
