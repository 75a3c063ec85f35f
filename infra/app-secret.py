#!/usr/bin/env python3
"""Changes fields of the stack's app secret (the JSON object of AppSecret) one at a time.

`aws secretsmanager put-secret-value` replaces the whole JSON: a value written with it that
lacks `jwtSigningKey` breaks every sign-in. This script reads the secret, changes one field and
writes the whole object back, so every other field survives.

    infra/app-secret.py fields <secret-id>                  # the field names (never the values)
    infra/app-secret.py set <secret-id> <field> < value     # e.g. anthropicApiKey, googleClientSecret
    infra/app-secret.py unset <secret-id> <field>
    infra/app-secret.py rotate-signing-key <secret-id>      # nobody is signed out
    infra/app-secret.py drop-previous-keys <secret-id>      # once the old tokens have expired

<secret-id> is the stack output AppSecretArn. `set` reads the value from standard input (one
trailing newline is dropped), so it stays out of the shell's history and the process list.
`rotate-signing-key` generates a new `jwtSigningKey` and moves the current one to the front of
`jwtPreviousSigningKeys` (a JSON list, kept as a string): tokens signed with it stay valid until
they expire, and every function reads the keys again within Secrets__RefreshSeconds (300 s).

`set` takes the fields the service reads: anthropicApiKey, openaiApiKey, metricsToken and
<provider>ClientSecret; any other name is refused (`unset` also removes one already there).

Needs Python 3 with boto3 (infra/tools.sh installs it and prints that Python:
~/.cache/paddock-tools/ops-venv/bin/python) and the usual AWS settings (AWS_REGION or
AWS_DEFAULT_REGION, credentials; AWS_ENDPOINT_URL_SECRETS_MANAGER for an emulator).
"""

import json
import os
import re
import secrets
import string
import sys

SIGNING_KEY = "jwtSigningKey"
PREVIOUS_KEYS = "jwtPreviousSigningKeys"
# As the template generates it: 64 letters and digits.
KEY_ALPHABET = string.ascii_letters + string.digits
KEY_LENGTH = 64
# The fields the service reads (besides the signing keys): a misspelt name would be stored and
# never read, so `set` refuses any other.
FIELDS = ("anthropicApiKey", "openaiApiKey", "metricsToken")
# A sign-in provider's client secret: the provider's name in AuthProviders, then ClientSecret.
PROVIDER_SECRET = re.compile(r"[a-z][a-z0-9_-]*ClientSecret")


def fail(message):
    # One line, whatever the SDK's message holds (some carry a response body).
    print(f"app-secret: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(1)


def client():
    try:
        import boto3
    except ImportError:
        fail("needs boto3: run infra/tools.sh and use the Python it prints (~/.cache/paddock-tools/ops-venv/bin/python)")
    # boto3 reads AWS_DEFAULT_REGION and the profile's region, not AWS_REGION (which the
    # Rust SDK and the functions read): take either, as an operator may have set only one.
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
    try:
        return boto3.session.Session(region_name=region).client("secretsmanager")
    except Exception as e:  # noqa: BLE001 - NoRegionError and the like say what is missing
        fail(f"{e} (set AWS_REGION to the stack's region, see infra/samconfig.toml)")


def check_field(field, fields):
    """Refuses a field the service does not read, unless the secret holds it already (so that a
    misspelt one set earlier can be removed)."""
    if field in FIELDS or PROVIDER_SECRET.fullmatch(field) or field in fields:
        return
    fail(f"unknown field {field!r}: the service reads {', '.join(FIELDS)} and <provider>ClientSecret "
         "(the provider's name in AuthProviders, e.g. googleClientSecret)")


def read(sm, secret_id):
    try:
        text = sm.get_secret_value(SecretId=secret_id)["SecretString"]
    except Exception as e:  # noqa: BLE001 - the SDK's errors all say what went wrong
        fail(f"cannot read {secret_id}: {e}")
    try:
        fields = json.loads(text)
    except ValueError:
        fail(f"{secret_id} is not a JSON object; fix it by hand first")
    if not isinstance(fields, dict):
        fail(f"{secret_id} is not a JSON object; fix it by hand first")
    if not isinstance(fields.get(SIGNING_KEY), str) or len(fields[SIGNING_KEY]) < 32:
        fail(f"{secret_id} has no {SIGNING_KEY} of 32 characters or more; refusing to write it back")
    return fields


def write(sm, secret_id, fields):
    try:
        sm.put_secret_value(SecretId=secret_id, SecretString=json.dumps(fields, separators=(",", ":")))
    except Exception as e:  # noqa: BLE001 - the SDK's errors all say what went wrong
        fail(f"cannot write {secret_id}: {e}")


def previous_keys(fields):
    """The previous keys as the service reads them: a JSON list, or keys separated by commas or
    white space."""
    text = (fields.get(PREVIOUS_KEYS) or "").strip()
    if text.startswith("["):
        keys = json.loads(text)
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            fail(f"{PREVIOUS_KEYS} is not a JSON list of strings")
        return keys
    return [k for k in text.replace(",", " ").split() if k]


def new_key():
    return "".join(secrets.choice(KEY_ALPHABET) for _ in range(KEY_LENGTH))


def main(argv):
    if len(argv) < 2 or argv[0] not in ("fields", "set", "unset", "rotate-signing-key", "drop-previous-keys"):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    command, secret_id, rest = argv[0], argv[1], argv[2:]
    takes_field = command in ("set", "unset")
    if len(rest) != (1 if takes_field else 0):
        fail(f"{command} takes {'<secret-id> <field>' if takes_field else '<secret-id>'}")
    sm = client()
    fields = read(sm, secret_id)

    if command == "fields":
        for name in sorted(fields):
            print(f"{name}{'' if fields[name] else ' (empty)'}")
        return 0

    if command in ("set", "unset"):
        field = rest[0]
        if field in (SIGNING_KEY, PREVIOUS_KEYS):
            fail(f"{field} is changed by rotate-signing-key and drop-previous-keys only")
        check_field(field, fields if command == "unset" else {})
        if command == "unset":
            fields.pop(field, None)
            write(sm, secret_id, fields)
            print(f"{secret_id}: {field} removed; {len(fields)} fields kept")
            return 0
        value = sys.stdin.read()
        if value.endswith("\n"):
            value = value[:-1]
        if not value:
            fail(f"no value for {field} on standard input (to remove it: unset)")
        fields[field] = value
        write(sm, secret_id, fields)
        print(f"{secret_id}: {field} set; {len(fields)} fields")
        return 0

    if command == "rotate-signing-key":
        keys = [fields[SIGNING_KEY]] + [k for k in previous_keys(fields) if k != fields[SIGNING_KEY]]
        fields[PREVIOUS_KEYS] = json.dumps(keys)
        fields[SIGNING_KEY] = new_key()
        write(sm, secret_id, fields)
        print(f"{secret_id}: new {SIGNING_KEY}; {len(keys)} previous key(s) still accepted")
        print("once the access-token lifetime (JwtExpiryMinutes) has passed: drop-previous-keys")
        return 0

    # drop-previous-keys
    dropped = len(previous_keys(fields))
    fields.pop(PREVIOUS_KEYS, None)
    write(sm, secret_id, fields)
    print(f"{secret_id}: {dropped} previous key(s) dropped")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        fail("interrupted")
    except Exception as e:  # noqa: BLE001 - the SDK's errors say what went wrong, in one line
        fail(f"{type(e).__name__}: {e}")
