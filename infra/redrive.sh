#!/usr/bin/env bash
# Moves the messages of one queue's dead-letter queue back to the queue, once the cause of
# the failures is fixed and deployed:
#
#   infra/redrive.sh <env> <queue>      # queue: track-maps, achievements, feed, accounts, webhooks
#
# Both queues' URLs come from the environment's stack outputs; see infra/stack.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PADDOCK_OPS_PYTHON:-$("$root/infra/tools.sh")}
exec "$py" "$root/infra/stack.py" redrive "$@"
