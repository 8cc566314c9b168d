"""The browser opened on a private file that signs it in, so that the sign-in URL never appears on
a command line (``ps`` shows every process's command line to every user of the machine)."""

from __future__ import annotations

import html
import os
import shutil
import tempfile
from pathlib import Path

PAGE = """<!doctype html>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url={url}">
<title>Signing in · sqs-redriver</title>
<p><a href="{url}">Open the console</a></p>
"""


class SignInPage:
    """A page that sends the browser to a sign-in URL, in a directory of its own (mode 0700),
    readable by this user alone (0600); ``remove`` takes both away."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="sqs-redriver-ui-"))
        self.path = self.directory / "sign-in.html"

    def write(self, url: str) -> str:
        """Write the page for ``url``; the ``file:`` URL to open it by."""
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as page:
            page.write(PAGE.format(url=html.escape(url, quote=True)))
        return self.path.as_uri()

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
