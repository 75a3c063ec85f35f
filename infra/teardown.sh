#!/usr/bin/env bash
# Deletes one environment's stack, and with --with-data its retained tables, bucket, secret
# and log groups, chosen by the stack's own resource list (never by a name prefix):
#
#   infra/teardown.sh dev                    # asks for the stack's name, deletes the stack only
#   infra/teardown.sh dev --with-data        # and its data (tables lose deletion protection first)
#   infra/teardown.sh dev --with-data --yes  # no question (scripts)
#
# The environment's stack_name and region come from infra/samconfig.toml; see infra/stack.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PADDOCK_OPS_PYTHON:-$("$root/infra/tools.sh")}
exec "$py" "$root/infra/stack.py" teardown "$@"
