#!/usr/bin/env bash
# Installs what the operator's scripts need into ${PADDOCK_TOOLS_DIR:-~/.cache/paddock-tools}/ops-venv
# and prints the Python to run them with:
#
#   infra/tools.sh          # boto3 (pinned below) in a virtualenv; nothing else
#
# infra/stack.py (teardown, redrive, outputs), infra/app-secret.py and the wrappers
# infra/teardown.sh and infra/redrive.sh run with that Python; none needs the AWS CLI.
# Python 3.11 or newer (tomllib reads infra/samconfig.toml). Run again after a version change here.
set -euo pipefail

tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
venv="$tools/ops-venv"
# The version the scripts were last checked with; newer ones keep the calls they make.
boto3_version=1.44.8

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "tools: Python 3.11 or newer is needed (python3 is $(python3 --version 2>&1))" >&2; exit 1; }
if ! "$venv/bin/python" -c "import boto3, sys; sys.exit(boto3.__version__ != '$boto3_version')" 2>/dev/null; then
  echo "installing boto3 $boto3_version into $venv" >&2
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "boto3==$boto3_version"
fi
echo "$venv/bin/python"
