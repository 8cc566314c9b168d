"""The web console's guard: the token exchanged for a session cookie, 403 for everyone else, a CSRF
token on every POST, the Host header checked, and the headers that forbid scripts and framing."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.support.aws import Aws
from tests.support.console import BASE_URL, PORT, TOKEN, console_app, console_tool, csrf_of, signed_in


def anonymous(aws: Aws) -> FlaskClient:
    return console_app(console_tool(aws, audited=False)).test_client()


def test_the_token_is_exchanged_for_a_strict_http_only_cookie_and_dropped_from_the_url(aws: Aws) -> None:
    client = anonymous(aws)

    opened = client.get(f"/groups?token={TOKEN}", base_url=BASE_URL)

    assert opened.status_code == 303
    assert opened.headers["Location"] == "/groups"
    cookie = opened.headers["Set-Cookie"]
    assert f"sqs-redriver-{PORT}=" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert client.get("/groups", base_url=BASE_URL).status_code == 200


def test_a_request_without_the_token_or_the_cookie_is_refused(aws: Aws) -> None:
    refused = anonymous(aws).get("/", base_url=BASE_URL)

    assert refused.status_code == 403
    assert b"Traceback" not in refused.data and b"open the console with the URL" in refused.data


def test_a_stale_token_is_refused(aws: Aws) -> None:
    refused = anonymous(aws).get("/?token=a-token-of-a-console-started-earlier", base_url=BASE_URL)

    assert refused.status_code == 403
    assert "Set-Cookie" not in refused.headers


def test_a_cookie_of_another_console_is_refused(aws: Aws) -> None:
    tool = console_tool(aws, audited=False)
    earlier = signed_in(console_app(tool))
    cookie = earlier.get_cookie(f"sqs-redriver-{PORT}", domain="127.0.0.1")
    assert cookie is not None
    later = console_app(tool).test_client()  # a new server: a new signing key
    later.set_cookie(cookie.key, cookie.value, domain="127.0.0.1")

    assert later.get("/", base_url=BASE_URL).status_code == 403


def test_a_post_without_the_sessions_csrf_token_is_refused(aws: Aws) -> None:
    client = signed_in(console_app(console_tool(aws, audited=False)))

    missing = client.post("/pause", data={"reason": "deploying"}, base_url=BASE_URL)
    wrong = client.post("/pause", data={"reason": "deploying", "csrf": "guessed"}, base_url=BASE_URL)
    page = client.get("/", base_url=BASE_URL).get_data(as_text=True)
    right = client.post("/pause", data={"reason": "deploying", "csrf": csrf_of(page)}, base_url=BASE_URL)

    assert (missing.status_code, wrong.status_code) == (403, 403)
    assert right.status_code == 303


def test_another_host_header_is_refused_even_with_the_token(aws: Aws) -> None:
    client = anonymous(aws)

    rebound = client.get(f"/?token={TOKEN}", base_url=f"http://attacker.example:{PORT}")
    other_port = client.get(f"/?token={TOKEN}", base_url="http://127.0.0.1:9")
    by_name = client.get(f"/?token={TOKEN}", base_url=f"http://localhost:{PORT}")

    assert (rebound.status_code, other_port.status_code, by_name.status_code) == (403, 403, 303)


def test_every_response_forbids_scripts_framing_sniffing_and_referrers(aws: Aws) -> None:
    client = anonymous(aws)

    for response in (
        client.get("/", base_url=BASE_URL),
        signed_in(console_app(console_tool(aws, audited=False))).get("/groups", base_url=BASE_URL),
    ):
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'none'" in csp and "frame-ancestors 'none'" in csp and "default-src 'self'" in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "no-referrer"


def test_an_unknown_page_is_a_plain_404(aws: Aws) -> None:
    missing = signed_in(console_app(console_tool(aws, audited=False))).get("/nowhere", base_url=BASE_URL)

    assert missing.status_code == 404 and b"Traceback" not in missing.data
