#!/usr/bin/env bash
# The whole API at one local address, as API Gateway serves it: every route of template.yaml's
# HTTP API goes to its Lambda function (each binary run as Lambda runs it, against a runtime
# API of its own) as an API Gateway HTTP API event, and the outbox stream, the queues and the
# schedules deliver their events as the template's event source mappings do
# (paddock-api-local, tests/src/local_api); the functions' metric lines go to moto's CloudWatch
# as CloudWatch Logs delivers them, so /metrics reads them back. Runs on the emulators
# (infra/emulators.sh; started here when not running, and then stopped on exit), creating the
# tables, bucket, queues and the secret `paddock-app` when missing.
#
#   infra/api-local.sh          # http://127.0.0.1:9000 (PADDOCK_API_ADDRESS=127.0.0.1:<port>)
#
# PADDOCK_API_SCHEDULE_SECONDS fires every schedule at that interval instead of its rate;
# PADDOCK_API_VISIBILITY_SECONDS makes a failed queue message come back sooner than the
# template's 180 s; PADDOCK_API_PROFILE=release builds release binaries. The service's own
# settings (`Section__Key`) in the environment reach every function. Function logs are
# prefixed with the function's name; Log__Format=pretty for readable lines. Each function runs
# under its own IAM policy from the template: a call outside it gets the service's AccessDenied
# and a log line naming the function, the action and the resource (PADDOCK_IAM_ENFORCE=0 only
# logs it). Ctrl-C stops everything started here.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
api_pid=
started_here=
policies=
stop() {
  if [ -n "$policies" ]; then rm -f "$policies"; fi
  if [ -n "$api_pid" ]; then kill -INT "$api_pid" 2>/dev/null || true; wait "$api_pid" 2>/dev/null || true; fi
  if [ -n "$started_here" ]; then "$root/infra/emulators.sh" down; fi
}
trap stop EXIT
trap 'exit 130' INT TERM

if ! emulator_env=$("$root/infra/emulators.sh" env 2>/dev/null); then
  started_here=1
  emulator_env=$("$root/infra/emulators.sh" up)
fi
eval "$emulator_env"

cd "$root"
# Each function gets only its own policy from the template, as in AWS (docs/permissions.md):
# the SAM translator (in the emulators' virtualenv) writes them.
tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
if ! "$tools/venv/bin/python" -c 'import samtranslator, cfnlint, sys; sys.exit(samtranslator.__version__ != "1.115.0")' 2>/dev/null; then
  "$tools/venv/bin/pip" install -q aws-sam-translator==1.115.0 cfn-lint
fi
policies=$(mktemp)
"$tools/venv/bin/python" tests/template/function_policies.py --out "$policies"
export PADDOCK_FUNCTION_POLICIES=$policies
# Where cargo put it (CARGO_TARGET_DIR and build.target-dir move it).
api=$(cargo build -q -p paddock-tests --bin paddock-api-local --message-format=json \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["executable"])')
"$api" &
api_pid=$!
wait "$api_pid"
