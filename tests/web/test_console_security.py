"""The web console's guard: a sign-in token good once and for a minute, exchanged for a cookie
holding only a session id, scoped to the pages' random path; sessions that end; 403 for everyone
else; a request from another site or port refused; every POST from the console's own origin with
the session's CSRF token; the Host header checked; a size limit; the headers that forbid scripts
and framing."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from sqs_redriver.console.web.guard import FORM_BYTES, SESSION_IDLE_SECONDS, SESSION_SECONDS, TOKEN_SECONDS
from tests.support.aws import Aws
from tests.support.console import (
    BASE_URL,
    COOKIE,
    FROM_THE_CONSOLE,
    ORIGIN,
    PORT,
    ROOT,
    Clock,
    console_app,
    console_tool,
    csrf_of,
    sign_in_path,
    signed_in,
)


def app_of(aws: Aws, clock: Clock | None = None) -> Flask:
    return console_app(console_tool(aws, audited=False), clock)


def pause(client: FlaskClient, headers: dict[str, str], csrf: str | None = None) -> int:
    """The status of a POST /pause with ``headers`` and the page's CSRF token (unless given)."""
    if csrf is None:
        csrf = csrf_of(client.get("/", base_url=BASE_URL).get_data(as_text=True))
    data = {"reason": "deploying", "csrf": csrf}
    return client.post("/pause", data=data, base_url=BASE_URL, headers=headers).status_code


def test_a_token_is_exchanged_for_a_cookie_that_holds_only_a_random_session_id(aws: Aws) -> None:
    app = app_of(aws)
    client = app.test_client()

    opened = client.get(sign_in_path(app), base_url=ORIGIN)

    assert opened.status_code == 303
    assert opened.headers["Location"] == f"{ROOT}/"
    [cookie] = opened.headers.getlist("Set-Cookie")
    value = re.fullmatch(rf"{COOKIE}=([^;]+); HttpOnly; Path={ROOT}/; SameSite=Strict", cookie)
    assert value, cookie
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", value.group(1))  # no signed data: no dots, no payload
    page = client.get("/", base_url=BASE_URL).get_data(as_text=True)
    assert csrf_of(page) not in cookie


def test_a_token_works_once(aws: Aws) -> None:
    app = app_of(aws)
    path = sign_in_path(app)
    assert app.test_client().get(path, base_url=ORIGIN).status_code == 303

    again = app.test_client().get(path, base_url=ORIGIN)

    assert again.status_code == 403 and "Set-Cookie" not in again.headers
    assert b"was used already" in again.data


def test_a_token_expires_a_minute_after_it_was_issued(aws: Aws) -> None:
    clock = Clock()
    app = app_of(aws, clock)
    in_time, too_late = sign_in_path(app), sign_in_path(app)
    clock.now += TOKEN_SECONDS - 1
    assert app.test_client().get(in_time, base_url=ORIGIN).status_code == 303

    clock.now += 1
    expired = app.test_client().get(too_late, base_url=ORIGIN)

    assert expired.status_code == 403 and "Set-Cookie" not in expired.headers


def test_a_browser_sent_from_another_site_is_signed_in_by_a_page_of_the_console(aws: Aws) -> None:
    """Opened from the sign-in file, the browser would not send the strict cookie along a redirect."""
    app = app_of(aws)

    opened = app.test_client().get(
        sign_in_path(app), base_url=ORIGIN, headers={"Sec-Fetch-Site": "cross-site"}
    )

    assert opened.status_code == 200 and f'content="0;url={ROOT}/"' in opened.get_data(as_text=True)
    assert opened.headers["Set-Cookie"].startswith(f"{COOKIE}=")


def test_a_session_ends_after_an_hour_unused(aws: Aws) -> None:
    clock = Clock()
    client = signed_in(app_of(aws, clock))
    clock.now += SESSION_IDLE_SECONDS - 1
    assert client.get("/audit", base_url=BASE_URL).status_code == 200

    clock.now += SESSION_IDLE_SECONDS
    ended = client.get("/audit", base_url=BASE_URL)

    assert ended.status_code == 403 and b"the session expired" in ended.data


def test_a_session_ends_twelve_hours_after_sign_in_however_used(aws: Aws) -> None:
    clock = Clock()
    client = signed_in(app_of(aws, clock))
    signed_in_at = clock.now
    while clock.now + SESSION_IDLE_SECONDS / 2 < signed_in_at + SESSION_SECONDS:
        clock.now += SESSION_IDLE_SECONDS / 2
        assert client.get("/audit", base_url=BASE_URL).status_code == 200

    clock.now = signed_in_at + SESSION_SECONDS
    ended = client.get("/audit", base_url=BASE_URL)

    assert ended.status_code == 403 and b"the session expired" in ended.data


def test_a_request_without_a_session_is_refused(aws: Aws) -> None:
    client = app_of(aws).test_client()

    refused = client.get("/", base_url=BASE_URL)
    at_the_origin = client.get("/", base_url=ORIGIN)
    a_page_outside_the_root = client.get("/groups", base_url=ORIGIN)

    assert (refused.status_code, at_the_origin.status_code, a_page_outside_the_root.status_code) == (403,) * 3
    assert b"Traceback" not in refused.data and b"not signed in" in refused.data
    assert b"open the console with the sign-in URL" in at_the_origin.data


def test_a_token_of_another_console_is_refused(aws: Aws) -> None:
    other = app_of(aws)

    refused = app_of(aws).test_client().get(sign_in_path(other), base_url=ORIGIN)

    assert refused.status_code == 403 and "Set-Cookie" not in refused.headers


def test_a_session_of_another_console_is_refused(aws: Aws) -> None:
    earlier = signed_in(app_of(aws))
    cookie = earlier.get_cookie(COOKIE, domain="127.0.0.1", path=f"{ROOT}/")
    assert cookie is not None
    later = app_of(aws).test_client()  # a new server: sessions of its own
    later.set_cookie(cookie.key, cookie.value, domain="127.0.0.1", path=f"{ROOT}/")

    assert later.get("/", base_url=BASE_URL).status_code == 403


def test_a_post_from_the_consoles_own_page_with_its_csrf_token_is_accepted(aws: Aws) -> None:
    client = signed_in(app_of(aws))

    assert pause(client, FROM_THE_CONSOLE) == 303
    assert pause(client, {"Origin": ORIGIN}) == 303  # a browser without Fetch Metadata
    assert pause(client, {"Sec-Fetch-Site": "same-origin"}) == 303  # one that sends no Origin


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": f"http://127.0.0.1:{PORT + 1}"},
        {"Origin": "null"},
        {"Origin": "http://attacker.example"},
        {"Origin": ORIGIN, "Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "none"},
    ],
    ids=["neither", "another port", "opaque", "another site", "same site", "cross-site", "none"],
)
def test_a_post_from_anywhere_but_the_consoles_own_pages_is_refused(
    aws: Aws, headers: dict[str, str]
) -> None:
    client = signed_in(app_of(aws))

    assert pause(client, headers) == 403


def test_a_post_without_the_sessions_csrf_token_is_refused(aws: Aws) -> None:
    client = signed_in(app_of(aws))
    missing, wrong = pause(client, FROM_THE_CONSOLE, csrf=""), pause(client, FROM_THE_CONSOLE, csrf="guessed")

    assert (missing, wrong) == (403, 403)


@pytest.mark.parametrize("fetched_from", ["same-site", "cross-site"])
def test_a_page_of_another_site_or_port_cannot_even_read_a_page(aws: Aws, fetched_from: str) -> None:
    client = signed_in(app_of(aws))

    refused = client.get("/groups", base_url=BASE_URL, headers={"Sec-Fetch-Site": fetched_from})

    assert refused.status_code == 403


def test_another_host_header_is_refused_even_with_a_token(aws: Aws) -> None:
    app = app_of(aws)
    client = app.test_client()

    rebound = client.get(sign_in_path(app), base_url=f"http://attacker.example:{PORT}")
    other_port = client.get(sign_in_path(app), base_url="http://127.0.0.1:9")
    by_name = client.get(sign_in_path(app), base_url=f"http://localhost:{PORT}")

    assert (rebound.status_code, other_port.status_code, by_name.status_code) == (403, 403, 303)


def test_a_body_over_the_limit_is_refused_with_413_and_one_at_the_limit_is_read(aws: Aws) -> None:
    client = signed_in(app_of(aws))
    csrf = csrf_of(client.get("/", base_url=BASE_URL).get_data(as_text=True))
    form = f"csrf={csrf}&reason=deploying&padding="
    headers = {**FROM_THE_CONSOLE, "Content-Type": "application/x-www-form-urlencoded"}

    at_the_limit = client.post(
        "/pause", data=form + "x" * (FORM_BYTES - len(form)), base_url=BASE_URL, headers=headers
    )
    over = client.post(
        "/pause", data=form + "x" * (FORM_BYTES + 1 - len(form)), base_url=BASE_URL, headers=headers
    )

    assert (at_the_limit.status_code, over.status_code) == (303, 413)
    assert b"Traceback" not in over.data


def test_every_response_forbids_scripts_framing_sniffing_and_referrers_to_other_sites(aws: Aws) -> None:
    for response in (
        app_of(aws).test_client().get("/", base_url=BASE_URL),
        signed_in(app_of(aws)).get("/groups", base_url=BASE_URL),
    ):
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'none'" in csp and "frame-ancestors 'none'" in csp and "default-src 'self'" in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "same-origin"


def test_an_unknown_page_is_a_plain_404(aws: Aws) -> None:
    missing = signed_in(app_of(aws)).get("/nowhere", base_url=BASE_URL)

    assert missing.status_code == 404 and b"Traceback" not in missing.data
