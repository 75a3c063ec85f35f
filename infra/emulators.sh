#!/usr/bin/env bash
# DynamoDB Local and moto_server (S3, SQS, Secrets Manager, CloudWatch) on free loopback ports.
#
#   infra/emulators.sh install   install what is missing, start nothing
#   infra/emulators.sh up        install what is missing, start both, print the env lines
#   infra/emulators.sh env       print the env lines of the running pair:
#                                  eval "$(infra/emulators.sh env)"
#   infra/emulators.sh status    say what runs where
#   infra/emulators.sh down      stop the processes that `up` started, by their process ids
#
# Tools go to ${PADDOCK_TOOLS_DIR:-~/.cache/paddock-tools}: DynamoDB Local from the npm
# package amplify-dynamodb-simulator, moto[server] in the virtualenv venv/. The state
# directory ${PADDOCK_EMULATORS_DIR:-<tools>/emulators} holds each process's id, port and log,
# and is DynamoDB Local's working directory. Give each concurrent user its own state directory.
# DynamoDB Local keeps its tables in memory: `down` discards them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
state=${PADDOCK_EMULATORS_DIR:-$tools/emulators}
emulator="$tools/node_modules/amplify-dynamodb-simulator/emulator"
host=127.0.0.1

say() { printf '%s\n' "$*" >&2; }

install() {
  mkdir -p "$tools"
  if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    # DynamoDB Local runs on Java 17; its loopback launcher needs the JDK's compiler.
    local apt_get="apt-get"; [ "$(id -u)" -eq 0 ] || apt_get="sudo apt-get"
    $apt_get update -qq
    DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq openjdk-17-jdk-headless >/dev/null
  fi
  if [ ! -x "$tools/venv/bin/moto_server" ]; then
    say "installing moto[server] into $tools/venv"
    [ -x "$tools/venv/bin/pip" ] || python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install -q --upgrade pip
    "$tools/venv/bin/pip" install -q 'moto[server]'
  fi
  if [ ! -f "$emulator/DynamoDBLocal.jar" ]; then
    say "installing DynamoDB Local (amplify-dynamodb-simulator) into $tools/node_modules"
    (cd "$tools" && npm install --no-audit --no-fund --silent amplify-dynamodb-simulator)
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# The recorded process, if it still runs and is the one recorded (its command line names
# what it should be, so a reused process id is never taken for it).
live_pid() { # name, what its command line contains
  local file="$state/$1.pid" pid
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2" || return 1
  printf '%s\n' "$pid"
}

ddb_running() { live_pid dynamodb DynamoDbLocalOnLoopback >/dev/null; }
moto_running() { live_pid moto moto_server >/dev/null; }

wait_for() { # url, name, pid
  for _ in $(seq 1 120); do
    if curl -s -o /dev/null "$1"; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then
      say "$2 exited early; its log ($state/$2.log):"; cat "$state/$2.log" >&2; return 1
    fi
    sleep 0.5
  done
  say "$2 did not answer at $1; its log ($state/$2.log):"; cat "$state/$2.log" >&2; return 1
}

start_dynamodb() {
  local port; port=$(free_port)
  # Started from the state directory: DynamoDB Local writes into its working directory.
  (cd "$state" && DDB_LOCAL_TELEMETRY=0 exec java -Djava.library.path="$emulator/DynamoDBLocal_lib" \
     -cp "$emulator/DynamoDBLocal.jar" "$root/infra/DynamoDbLocalOnLoopback.java" "$host" \
     -inMemory -port "$port" -disableTelemetry \
     </dev/null >"$state/dynamodb.log" 2>&1) &
  local pid=$!
  echo "$pid" >"$state/dynamodb.pid"
  echo "$port" >"$state/dynamodb.port"
  wait_for "http://$host:$port" dynamodb "$pid" || { stop_one dynamodb DynamoDbLocalOnLoopback; return 1; }
}

start_moto() {
  local port; port=$(free_port)
  (cd "$state" && exec "$tools/venv/bin/moto_server" -H "$host" -p "$port" \
     </dev/null >"$state/moto.log" 2>&1) &
  local pid=$!
  echo "$pid" >"$state/moto.pid"
  echo "$port" >"$state/moto.port"
  wait_for "http://$host:$port/moto-api/" moto "$pid" || { stop_one moto moto_server; return 1; }
}

print_env() {
  local ddb moto
  ddb=$(cat "$state/dynamodb.port") moto=$(cat "$state/moto.port")
  cat <<EOF
export AWS_ENDPOINT_URL_DYNAMODB=http://$host:$ddb
export AWS_ENDPOINT_URL_S3=http://$host:$moto
export AWS_ENDPOINT_URL_SQS=http://$host:$moto
export AWS_ENDPOINT_URL_SECRETS_MANAGER=http://$host:$moto
export AWS_ENDPOINT_URL_CLOUDWATCH=http://$host:$moto
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
EOF
}

stop_one() { # name, what its command line contains
  local pid
  if pid=$(live_pid "$1" "$2"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    say "stopped $1 (process $pid)"
  fi
  rm -f "$state/$1.pid" "$state/$1.port"
}

case "${1:-}" in
  install)
    install
    ;;
  up)
    install
    mkdir -p "$state"
    ddb_running || start_dynamodb
    moto_running || start_moto
    say "DynamoDB Local on $host:$(cat "$state/dynamodb.port"), moto_server on $host:$(cat "$state/moto.port"); state in $state"
    print_env
    ;;
  env)
    if ! ddb_running || ! moto_running; then
      say "the emulators are not running (state directory $state); start them with: $0 up"
      exit 1
    fi
    print_env
    ;;
  status)
    for name in dynamodb moto; do
      pattern=DynamoDbLocalOnLoopback; [ "$name" = moto ] && pattern=moto_server
      if pid=$(live_pid "$name" "$pattern"); then
        say "$name: process $pid on $host:$(cat "$state/$name.port")"
      else
        say "$name: not running"
      fi
    done
    ;;
  down)
    stop_one dynamodb DynamoDbLocalOnLoopback
    stop_one moto moto_server
    ;;
  *)
    say "usage: $0 install|up|env|status|down"
    exit 2
    ;;
esac
