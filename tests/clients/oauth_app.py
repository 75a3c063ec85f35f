"""An app that acts for a driver, built on Authlib's OAuth 2 client as a tool author would
(unmodified, from the package registry): it finds the endpoints in the server's metadata, sends
the driver through the consent page (here a scripted browser posting the page's own forms),
exchanges the code with PKCE, calls the API, refreshes, and revokes.

Usage: oauth_app.py <base URL of a running server>
"""

import os
import sys

# The local server speaks plain http on loopback; Authlib refuses that unless told.
os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"

import requests  # noqa: E402
from authlib.common.security import generate_token  # noqa: E402
from authlib.integrations.requests_client import OAuth2Session  # noqa: E402
from driver_browser import consent, register  # noqa: E402

API = sys.argv[1].rstrip("/")
REDIRECT = "http://127.0.0.1:8765/callback"


def check(condition, message):
    if not condition:
        raise SystemExit(f"oauth_app.py: {message}")


metadata = requests.get(f"{API}/.well-known/oauth-authorization-server", timeout=30).json()
check(metadata["issuer"] == API, f"issuer {metadata['issuer']}")
check("S256" in metadata["code_challenge_methods_supported"], "no S256")

_, owner = register(API, "Owner")
made = requests.post(
    f"{API}/v1/apps",
    headers={"authorization": f"Bearer {owner}"},
    json={"name": "Authlib Bot", "redirectUris": ["http://127.0.0.1/callback"]},
    timeout=30,
)
check(made.status_code == 201, made.text)
client_id = made.json()["data"]["app"]["clientId"]
email, _ = register(API, "Driver")

client = OAuth2Session(
    client_id,
    redirect_uri=REDIRECT,
    scope="profile:read boards:read",
    code_challenge_method="S256",
    token_endpoint_auth_method="none",
)
verifier = generate_token(64)
url, state = client.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier)

# The driver's browser: the sign-in form, then the consent.
location, params = consent(API, url, email, "Authlib Bot")
check(params.get("iss") == API, f"iss {params.get('iss')} (RFC 9207)")

token = client.fetch_token(
    metadata["token_endpoint"], authorization_response=location, code_verifier=verifier, state=state
)
check(token["access_token"].startswith("pda_"), "an app token")
me = client.get(f"{API}/v1/profile/me", timeout=30)
check(me.status_code == 200 and me.json()["data"]["email"] == email, f"profile {me.status_code}")
sessions = client.get(f"{API}/v1/sessions", timeout=30)
check(sessions.status_code == 403, f"sessions without the scope: {sessions.status_code}")

first_refresh = token["refresh_token"]
refreshed = client.refresh_token(metadata["token_endpoint"])
check(refreshed["refresh_token"] != first_refresh, "the refresh token rotates")
check(client.get(f"{API}/v1/profile/me", timeout=30).status_code == 200, "refreshed token works")

revoked = client.revoke_token(
    metadata["revocation_endpoint"], token=refreshed["refresh_token"], token_type_hint="refresh_token"
)
check(revoked.status_code == 200, f"revocation {revoked.status_code}")
check(client.get(f"{API}/v1/profile/me", timeout=30).status_code == 401, "revocation ends the access token")
print("oauth_app.py: consent, code with PKCE, API call, refresh and revocation through Authlib: ok")
