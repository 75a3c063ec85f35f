#!/usr/bin/env bash
# Every Lambda function of the workspace behind `cargo lambda watch`'s emulation of the Lambda
# APIs, against the emulators: DynamoDB Local and moto_server (infra/emulators.sh; started
# here when not running, and then stopped on exit), a Secrets Manager secret like the stack's
# (a generated jwtSigningKey), and tables, bucket and queues created at start
# (Store__CreateResources=true).
#
#   infra/watch.sh              # serves on http://127.0.0.1:9000 (PADDOCK_WATCH_PORT)
#   infra/watch.sh --release    # release builds
#
# HTTP functions answer at http://127.0.0.1:9000/lambda-url/<binary>/<path> (the request
# becomes an API Gateway event); event functions take `cargo lambda invoke <binary>
# --data-file <event.json>`. Nothing feeds the outbox stream or the queues to the functions
# here: invoke the relay and the consumers with their events (docs/testing.md, "Local emulation"). For
# the whole API at its real paths with the events flowing, run infra/api-local.sh instead.
#
# `cargo lambda watch` runs `cargo run --bin <name>`, which in this workspace reaches only the
# default member (the local server); so it serves the Lambda APIs alone (--only-lambda-apis)
# and this script builds every function and starts each one against its runtime API, one
# process per function as in Lambda. A code change needs a restart. Logs are JSON, as in
# Lambda; Log__Format=pretty for readable lines. Ctrl-C stops everything started here.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
venv="$tools/lambda-venv"
port=${PADDOCK_WATCH_PORT:-9000}
build_args=()
if [ "${1:-}" = "--release" ]; then build_args=(--release); fi

if [ ! -x "$venv/bin/cargo-lambda" ]; then
  echo "== installing cargo-lambda into $venv" >&2
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q cargo-lambda
fi
export PATH="$venv/bin:$PATH"

functions=()
for dir in "$root"/functions/*/; do
  name=$(basename "$dir")
  [ "$name" = local ] || functions+=("$name")
done

cd "$root"
echo "== building ${functions[*]}${build_args[*]:+ (${build_args[*]})}" >&2
packages=()
for name in "${functions[@]}"; do packages+=(-p "paddock-$name"); done
# Where cargo put each binary (CARGO_TARGET_DIR and build.target-dir move it), from its build
# messages: "<name> <path>" lines.
binaries=$(cargo build -q "${build_args[@]}" "${packages[@]}" --message-format=json \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])')
binary() { awk -v name="$1" '$1 == name { print $2 }' <<<"$binaries"; }

pids=()
started_here=
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$started_here" ]; then "$root/infra/emulators.sh" down; fi
}
trap stop EXIT
trap 'exit 130' INT TERM

if ! emulator_env=$("$root/infra/emulators.sh" env 2>/dev/null); then
  started_here=1
  emulator_env=$("$root/infra/emulators.sh" up)
fi
eval "$emulator_env"

# The application secret, as the stack creates it (AppSecret): a generated signing key and
# empty AI provider keys (the coaching endpoints answer 503 until one is put in).
secret_id=${Secrets__Id:-paddock-app}
"$tools/venv/bin/python" - "$secret_id" <<'PY'
import json, secrets, sys
import boto3

client = boto3.client("secretsmanager")
name = sys.argv[1]
try:
    client.describe_secret(SecretId=name)
except client.exceptions.ResourceNotFoundException:
    value = {"jwtSigningKey": secrets.token_urlsafe(48), "anthropicApiKey": "", "openaiApiKey": ""}
    client.create_secret(Name=name, SecretString=json.dumps(value))
    print(f"created the secret {name}", file=sys.stderr)
PY

export Store__Backend=aws Store__CreateResources=true Secrets__Id="$secret_id"
# Provider callbacks come back to the auth function's local URL.
export Auth__PublicUrl=${Auth__PublicUrl:-http://127.0.0.1:$port/lambda-url/paddock-auth}

echo "== cargo lambda watch --only-lambda-apis on http://127.0.0.1:$port" >&2
# Loopback only: the runtime API has no authentication (whoever reaches it can take a
# function's events and answer them), and cargo lambda's default address, `::`, is every
# interface.
cargo lambda watch --only-lambda-apis --invoke-address 127.0.0.1 --invoke-port "$port" &
watch_pid=$!
pids+=("$watch_pid")
for _ in $(seq 1 120); do
  # A connection, not a request: a request to / would wait for the default function.
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$watch_pid" 2>/dev/null || { echo "cargo lambda watch exited" >&2; exit 1; }
  sleep 0.5
done
# A cargo-lambda that ignored the address would serve every interface: then nothing starts.
if command -v ss >/dev/null 2>&1 \
  && ss -ltnH "sport = :$port" | awk '{print $4}' | grep -Eqv '^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):'; then
  echo "cargo lambda watch listens beyond 127.0.0.1 on port $port; stopping" >&2
  exit 1
fi

for name in "${functions[@]}"; do
  memory=256
  case "$name" in profile | sharepacks) memory=512 ;; esac
  # What Lambda's runtime gives a function process; each line of its output is prefixed
  # with its name.
  AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$port/.rt/paddock-$name" \
  AWS_LAMBDA_FUNCTION_NAME="paddock-$name" AWS_LAMBDA_FUNCTION_VERSION=1 \
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE=$memory \
    "$(binary "paddock-$name")" > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
done
echo "== ${#functions[@]} functions up: http://127.0.0.1:$port/lambda-url/paddock-<name>/<path>," \
  "cargo lambda invoke paddock-<name> --invoke-address 127.0.0.1 --invoke-port $port --data-file <event.json>" >&2
wait "$watch_pid"
