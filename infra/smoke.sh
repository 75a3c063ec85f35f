#!/bin/sh
# Walks a deployed (or local) Paddock through what a driver does, as a throwaway driver, and
# removes that driver at the end:
#
#   infra/smoke.sh <base-url>          # e.g. the stack's ApiUrl, or http://127.0.0.1:8080
#
# One line per step (health, register, upload, submit, board, board page, metrics, delete);
# the first failing step ends it with exit status 1 and its name, after deleting the driver
# if one was registered. `/metrics` passes with 200, and without a token also with 401 or 404
# (in AWS it is off until the app secret has a metricsToken, and refuses a scrape without
# it); PADDOCK_METRICS_TOKEN=<token> sends the token and then requires 200.
# Needs sh, curl and python3 (for JSON), nothing else: infra/deploy.sh runs it after a deploy,
# and an uptime check can run it as it is.
set -u

if [ $# -ne 1 ] || [ -z "$1" ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
base=${1%/}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
token=""
deleted=no

cleanup() {
  # A failed run still removes its driver, so that smoke drivers do not pile up on boards.
  if [ -n "$token" ] && [ "$deleted" = no ]; then
    curl -s -o /dev/null --max-time 20 -X DELETE "$base/v1/profile/me" -H "authorization: Bearer $token" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# request <method> <path> [curl args...]: the status in $status, the body in $work/body.
request() {
  method=$1 path=$2
  shift 2
  status=$(curl -s -o "$work/body" -w '%{http_code}' --max-time 30 -X "$method" "$base$path" "$@") || status=000
}

fail() { # step, what went wrong
  echo "FAILED $1: $2"
  exit 1
}

# expect <step> <status...>: the request's status is one of them, else the step fails with
# the start of the body.
expect() {
  step=$1
  shift
  for want in "$@"; do
    [ "$status" = "$want" ] && return 0
  done
  if [ "$status" = 000 ]; then fail "$step" "no answer from $base"; fi
  fail "$step" "HTTP $status: $(head -c 300 "$work/body" | tr '\n' ' ')"
}

# field <python expression over the envelope d>: prints it, or nothing when it is missing.
field() {
  python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(eval(sys.argv[2], {"d": d}))
except Exception:
    pass' "$work/body" "$1"
}

json='content-type: application/json'

request GET /health
expect health 200
[ "$(field 'd["data"]["status"]')" = Healthy ] || fail health "not Healthy: $(head -c 300 "$work/body")"
echo "ok     health"

suffix=$(python3 -c 'import secrets; print(secrets.token_hex(6))')
password=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
request POST /v1/auth/register -H "$json" \
  -d "{\"email\":\"smoke-$suffix@example.com\",\"password\":\"$password\",\"displayName\":\"Smoke test $suffix\"}"
expect register 201
token=$(field 'd["data"]["accessToken"]')
[ -n "$token" ] || fail register "no accessToken in the answer"
echo "ok     register (smoke-$suffix@example.com)"

auth="authorization: Bearer $token"
request POST /v1/sessions -H "$auth" -H "$json" --data-binary "@$here/events/session-upload.json"
expect upload 201 200
session=$(field 'd["data"]["sessionId"]')
track=$(field 'd["data"]["trackId"]')
[ -n "$session" ] && [ -n "$track" ] || fail upload "no sessionId or trackId in the answer"
echo "ok     upload (session $session, track $track)"

best=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["BestLapMs"])' "$here/events/session-upload.json")
request POST /v1/leaderboards/submit -H "$auth" -H "$json" \
  -d "{\"sessionId\":\"$session\",\"lapTimeMs\":$best,\"qualityScore\":0.95}"
expect submit 200
rank=$(field 'd["data"]["rank"]')
[ -n "$rank" ] || fail submit "no rank in the answer"
echo "ok     submit (lap $best ms, rank $rank)"

request GET "/v1/leaderboards?trackId=$track"
expect board 200
[ -n "$(field 'd["data"]["totalEntries"]')" ] || fail board "no totalEntries in the answer"
echo "ok     board ($(field 'd["data"]["totalEntries"]') entries)"

request GET "/boards/$track"
expect "board page" 200
grep -qi '<html' "$work/body" || fail "board page" "the answer is not an HTML page"
echo "ok     board page"

if [ -n "${PADDOCK_METRICS_TOKEN:-}" ]; then
  request GET /metrics -H "authorization: Bearer $PADDOCK_METRICS_TOKEN"
  expect metrics 200
else
  request GET /metrics
  expect metrics 200 401 404
fi
if [ "$status" = 200 ]; then
  grep -q '^# TYPE ' "$work/body" || fail metrics "HTTP 200 without Prometheus text"
  echo "ok     metrics"
else
  echo "ok     metrics (HTTP $status: off or needs the token; PADDOCK_METRICS_TOKEN reads them)"
fi

request DELETE /v1/profile/me -H "$auth"
expect delete 202
deleted=yes
echo "ok     delete (the driver's data is being removed)"
echo "smoke test passed: $base"
