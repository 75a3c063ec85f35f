"""A driver on Paddock's consent page, as the client flows of this folder drive it: a
registration, and a scripted browser that signs in on the page and approves by posting the
page's own forms, keeping its cookies and following no redirect.
"""

import html.parser
import urllib.parse
import uuid

import requests

PASSWORD = "correct horse battery"


class HiddenFields(html.parser.HTMLParser):
    """The hidden inputs of a page's form."""

    def __init__(self):
        super().__init__()
        self.fields = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("type") == "hidden":
            self.fields[attrs["name"]] = attrs.get("value", "")


def hidden_fields(page):
    parser = HiddenFields()
    parser.feed(page)
    return parser.fields


def register(api, name):
    """A new driver named `name`: (email, sign-in access token)."""
    email = f"{name.lower()}-{uuid.uuid4().hex[:12]}@example.com"
    body = {"email": email, "password": PASSWORD, "displayName": name}
    answer = requests.post(f"{api}/v1/auth/register", json=body, timeout=30)
    if answer.status_code != 201:
        raise SystemExit(f"registering {name}: {answer.status_code} {answer.text}")
    return email, answer.json()["data"]["accessToken"]


def consent(api, url, email, app_name=None):
    """Opens the authorization `url`, signs in as `email` and approves (checking the page
    names `app_name`, when given): the redirect back to the app, and its query's parameters."""
    browser = requests.Session()
    origin = {"origin": api}

    def fail(message):
        raise SystemExit(f"consent: {message}")

    page = browser.get(url, allow_redirects=False, timeout=30)
    if page.status_code != 200:
        fail(f"consent page {page.status_code}: {page.text[:300]}")
    form = hidden_fields(page.text) | {"action": "sign_in", "email": email, "password": PASSWORD}
    shown = browser.post(f"{api}/oauth/authorize", data=form, headers=origin, allow_redirects=False, timeout=30)
    if shown.status_code != 200 or (app_name and app_name not in shown.text):
        fail(f"sign-in {shown.status_code}")
    form = hidden_fields(shown.text) | {"action": "approve"}
    back = browser.post(f"{api}/oauth/authorize", data=form, headers=origin, allow_redirects=False, timeout=30)
    if back.status_code != 303:
        fail(f"approval {back.status_code}")
    location = back.headers["location"]
    return location, dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
