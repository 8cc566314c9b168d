"""``sqs-redriver ui``: prints a sign-in URL on 127.0.0.1, good once, serves it, prints a fresh one
at each Enter typed in its terminal, and Ctrl-C (SIGINT) stops it with exit 0 and no traceback. Its
own process, as the operator runs it (its terminal a pseudo-terminal)."""

from __future__ import annotations

import urllib.error
import urllib.request

from tests.support.console import SIGN_IN_URL, ui_command

HANG_SECONDS = 60  # a bound for a hung console only: on a busy machine a page can take seconds


def status_of(url: str) -> int:
    """The status of a GET (urllib does not follow a sign-in's 303 with the cookie: it is the answer)."""
    try:
        with urllib.request.build_opener(NoRedirect()).open(url, timeout=HANG_SECONDS) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_ui_serves_a_sign_in_url_good_once_prints_a_fresh_one_at_enter_and_stops_on_ctrl_c() -> None:
    with ui_command() as ui:
        url = ui.printed_url()
        found = SIGN_IN_URL.match(url)
        assert found
        port = found.group(1)

        without_token = status_of(f"http://127.0.0.1:{port}/")
        stale = status_of(f"http://127.0.0.1:{port}/?token=stale")
        exchanged, again = status_of(url), status_of(url)
        ui.press_enter()
        fresh = status_of(ui.printed_url())
        errors = ui.interrupt()

    assert (without_token, stale, exchanged, again, fresh) == (403, 403, 303, 403, 303)
    assert ui.process.returncode == 0 and "Traceback" not in errors, errors


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None
