"""Verifies webhook deliveries with the Standard Webhooks reference library.

Reads {"secrets": [...], "messages": [{"headers": {...}, "body": "..."}]} on stdin and
prints, for each message, the list of secrets (by index) it verifies under.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    job = json.load(sys.stdin)
    hooks = [Webhook(secret) for secret in job["secrets"]]
    verdicts = []
    for message in job["messages"]:
        passed = []
        for index, hook in enumerate(hooks):
            try:
                hook.verify(message["body"], message["headers"])
                passed.append(index)
            except WebhookVerificationError:
                pass
        verdicts.append(passed)
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
