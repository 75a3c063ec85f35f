"""An AI assistant's side of Paddock's MCP server, on the official MCP Python SDK (unmodified,
from the package registry): refused at /mcp, the SDK finds the authorization server through the
protected resource metadata, sends the driver through the consent page (here a scripted browser
posting the page's own forms), exchanges the code with PKCE for a token bound to the MCP
endpoint, then lists the tools and calls every one; each answer is compared with the REST API's
answer to the same question.

Usage: mcp_assistant.py <base URL of a running server>
"""

import asyncio
import sys
import urllib.parse
import uuid

import httpx2
import requests
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from driver_browser import consent, register

API = sys.argv[1].rstrip("/")
REDIRECT = "http://127.0.0.1:8766/callback"
CAR = "Ferrari 296 GT3"


def check(condition, message):
    if not condition:
        raise SystemExit(f"mcp_assistant.py: {message}")


def rest(token, path, method="GET", body=None):
    answer = requests.request(
        method, f"{API}{path}", headers={"authorization": f"Bearer {token}"}, json=body, timeout=30
    )
    check(answer.status_code in (200, 201), f"{method} {path}: {answer.status_code} {answer.text}")
    return answer.json()


def a_driver_with_a_lap():
    """A driver with one session on a track and its lap on the board: (email, token, ids)."""
    email, token = register(API, "Driver")
    session = {
        "clientSessionId": str(uuid.uuid4()), "gameId": "acc", "trackName": "Monza", "trackLayout": "",
        "vehicleName": CAR, "recordedAt": "2026-05-01T18:30:00Z", "bestLapMs": 107345,
        "sessionPhase": "Practice", "weatherSummary": "Dry, 24 C",
        "laps": [{"lapIndex": 0, "lapTimeMs": 107345, "isValid": True, "countsForSessionTiming": True,
                  "qualityCombined": 0.93, "qualityCoherence": 0.95, "qualityStability": 0.91,
                  "qualityCompleteness": 0.94, "numPenalties": 0, "numPitstops": 0, "inPitsAtLapEnd": False}],
    }
    session_id = rest(token, "/v1/sessions", "POST", session)["data"]["sessionId"]
    submitted = rest(token, "/v1/leaderboards/submit", "POST",
                     {"sessionId": session_id, "lapTimeMs": 107345, "qualityScore": 0.93})
    return email, token, session_id, submitted["data"]["trackId"]


class Storage:
    """The assistant's store: the app registered beforehand, and the tokens it is given."""

    def __init__(self, client_info):
        self.client_info = client_info
        self.tokens = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class DriversBrowser:
    """The driver's browser: signs in on the consent page and approves; keeps the redirect."""

    def __init__(self, email):
        self.email = email
        self.back = None
        self.visited = None

    async def open(self, url):
        self.visited = url
        _, self.back = consent(API, url, self.email)

    async def returned(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=self.back["code"], state=self.back.get("state"),
                                       iss=self.back.get("iss"))


async def main():
    _, owner = register(API, "Owner")
    made = rest(owner, "/v1/apps", "POST", {"name": "Assistant", "redirectUris": ["http://127.0.0.1/callback"]})
    client_id = made["data"]["app"]["clientId"]
    email, driver, session_id, track_id = a_driver_with_a_lap()

    metadata = OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="Assistant", token_endpoint_auth_method="none",
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    storage = Storage(OAuthClientInformationFull(client_id=client_id, **metadata.model_dump(exclude_none=True)))
    browser = DriversBrowser(email)
    auth = OAuthClientProvider(f"{API}/mcp", metadata, storage, redirect_handler=browser.open,
                               callback_handler=browser.returned)
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with Client(streamable_http_client(f"{API}/mcp", http_client=http)) as client:
            check(browser.visited is not None, "the SDK never sent the driver to the consent page")
            visited = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(browser.visited).query))
            check(visited.get("resource") == f"{API}/mcp", f"resource {visited.get('resource')} (RFC 8707)")
            check(storage.tokens.access_token.startswith("pda_"), "an app's token")
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            board = f"trackId={track_id}"
            calls = {
                "get_my_profile": ({}, "/v1/profile/me"),
                "list_my_sessions": ({}, "/v1/sessions"),
                "get_my_session": ({"id": session_id}, f"/v1/sessions/{session_id}"),
                "list_tracks": ({}, "/v1/tracks"),
                "get_board": ({"trackId": track_id}, f"/v1/leaderboards?{board}"),
                "get_my_standing": ({"trackId": track_id}, f"/v1/leaderboards/me?{board}"),
                "list_board_cars": ({"trackId": track_id}, f"/v1/leaderboards/vehicles?{board}"),
                "get_my_progress": ({"trackId": track_id}, f"/v1/leaderboards/me/progress?{board}"),
                "list_my_feed": ({}, "/v1/feed"),
                "list_my_achievements": ({}, "/v1/achievements"),
                "list_events": ({}, "/v1/events"),
            }
            # Standings need an event; a missing one is the tool's error, as the route's 404.
            unknown_event = str(uuid.uuid4())
            check(set(names) == set(calls) | {"get_event_standings"}, f"tools {names}")
            for name, (arguments, path) in calls.items():
                # The feed and the achievements are written by background consumers: an answer
                # may grow between the two reads, so a pair that differs is read again.
                for attempt in range(20):
                    result = await client.call_tool(name, arguments)
                    check(not result.is_error, f"{name}: {result.content}")
                    if result.structured_content == rest(driver, path):
                        break
                    check(attempt < 19, f"{name} differs from GET {path}")
                    await asyncio.sleep(0.5)
            missing = await client.call_tool("get_event_standings", {"id": unknown_event})
            check(missing.is_error, "an unknown event's standings are an error")
    print(f"mcp_assistant.py: discovery, consent, {len(names)} tools listed, every tool answered as the REST API: ok")


asyncio.run(main())
