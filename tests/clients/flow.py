"""A driver's short flow through the Python client generated from the server's /openapi.json.

Usage: flow.py BASE_URL, with the generated package `paddock_client` on PYTHONPATH
(tests/run.sh generates it). Registers, makes a personal access token for a tool (upload,
submit and read boards), and with that token uploads the example session of the document,
submits its best lap and reads the board and the driver's standing; checks that the token is
refused (403) where its scopes do not reach and that a bad token is refused (401), each parsed
as the error envelope. Exits non-zero on the first surprise.
"""

import sys
import uuid

import httpx

from paddock_client import AuthenticatedClient, Client
from paddock_client.api.auth import register_with_email
from paddock_client.api.leaderboards import get_leaderboard, get_my_standing, submit_lap
from paddock_client.api.sessions import list_sessions, upload_session
from paddock_client.api.tokens import create_access_token
from paddock_client.models import (
    CreatedTokenEnvelope,
    CreateTokenRequest,
    ErrorEnvelope,
    LeaderboardEnvelope,
    ReceiptEnvelope,
    RegisterRequest,
    SessionUploadDto,
    StandingEnvelope,
    SubmitOutcomeEnvelope,
    SubmitRequest,
    TokenEnvelope,
)


def example(document: dict, path: str) -> dict:
    """The example request body the document gives for `POST path`."""
    body = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return dict(body["example"])


def expect(response, status: int, kind: type):
    """The parsed answer, once it has `status` and was parsed as `kind`."""
    if response.status_code != status or not isinstance(response.parsed, kind):
        sys.exit(
            f"expected {status} {kind.__name__}, got {response.status_code}: {response.content!r}"
        )
    return response.parsed


def main(base_url: str) -> None:
    document = httpx.get(f"{base_url}/openapi.json").json()

    register = RegisterRequest.from_dict(example(document, "/v1/auth/register"))
    register.email = f"python-{uuid.uuid4().hex[:12]}@example.com"
    tokens = expect(
        register_with_email.sync_detailed(client=Client(base_url=base_url), body=register),
        201,
        TokenEnvelope,
    )
    signed_in = AuthenticatedClient(base_url=base_url, token=tokens.data.access_token)
    request = CreateTokenRequest.from_dict(
        {"name": "lap tool", "scopes": ["sessions:write", "boards:submit", "boards:read"], "expiresInDays": 7}
    )
    created = expect(create_access_token.sync_detailed(client=signed_in, body=request), 201, CreatedTokenEnvelope)
    assert created.data.token.startswith("pdk_"), created
    # From here on the tool's own token, not the driver's sign-in.
    driver = AuthenticatedClient(base_url=base_url, token=created.data.token)

    upload = SessionUploadDto.from_dict(example(document, "/v1/sessions"))
    upload.client_session_id = str(uuid.uuid4())
    receipt = expect(upload_session.sync_detailed(client=driver, body=upload), 201, ReceiptEnvelope)
    session_id, track_id = receipt.data.session_id, receipt.data.track_id

    best = min(upload.laps, key=lambda lap: lap.lap_time_ms)
    submit = SubmitRequest(
        session_id=uuid.UUID(session_id),
        lap_time_ms=best.lap_time_ms,
        quality_score=best.quality_combined,
    )
    outcome = expect(submit_lap.sync_detailed(client=driver, body=submit), 200, SubmitOutcomeEnvelope)
    # Other runs against the same server may have set faster laps on the example's track.
    assert outcome.data.improved and outcome.data.rank, outcome

    board = expect(get_leaderboard.sync_detailed(client=driver, track_id=track_id), 200, LeaderboardEnvelope)
    assert any(entry.lap_time_ms == best.lap_time_ms for entry in board.data.entries), board

    standing = expect(
        get_my_standing.sync_detailed(client=driver, track_id=uuid.UUID(track_id)), 200, StandingEnvelope
    )
    assert standing.data.rank == outcome.data.rank and standing.data.entry.lap_time_ms == best.lap_time_ms, standing

    # The token was not given sessions:read.
    beyond = expect(list_sessions.sync_detailed(client=driver), 403, ErrorEnvelope)
    assert beyond.success is False and "sessions:read" in beyond.error, beyond

    stranger = AuthenticatedClient(base_url=base_url, token="not-a-token")
    refused = expect(
        get_my_standing.sync_detailed(client=stranger, track_id=uuid.UUID(track_id)), 401, ErrorEnvelope
    )
    assert refused.success is False and refused.error, refused

    print("python client: register, a token, upload, submit, board, standing, a 403 and a 401 envelope: ok")


if __name__ == "__main__":
    main(sys.argv[1].rstrip("/"))
