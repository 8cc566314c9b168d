"""`make browser`, which `make suite` (and so `make test` and CI) runs first: the browser the web
console's tests drive is installed when it is missing and apt-get can install it (root), and
otherwise the make stops with one line naming the command to run. `id` and `apt-get` are stand-ins
on the PATH, which record what they were asked; the Makefile's own recipe runs."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def script(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def make_browser(tmp_path: Path, *, uid: int, chromium: Path) -> subprocess.CompletedProcess[str]:
    """`make browser` with ``chromium`` as the browser's path, as the user ``uid``; apt-get
    appends each call's arguments to tmp_path/apt-get.calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script(bin_dir / "id", f'[ "$1" = -u ] && echo {uid}')
    apt_get = bin_dir / "apt-get"
    script(apt_get, f'echo "$DEBIAN_FRONTEND $*" >> {tmp_path / "apt-get.calls"}')
    return subprocess.run(
        ["make", "--no-print-directory", "browser", f"CHROMIUM={chromium}", f"APT_GET={apt_get}"],
        cwd=ROOT,
        env={**outside_make(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        check=False,
    )


def outside_make() -> dict[str, str]:
    """The environment without what an enclosing make passes down (`make test` runs this suite):
    with it, the inner make names itself make[N] on stderr and takes the outer one's flags."""
    return {
        k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
    }


def apt_get_calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "apt-get.calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_missing_browser_is_installed_with_apt_get_as_root(tmp_path: Path) -> None:
    done = make_browser(tmp_path, uid=0, chromium=tmp_path / "absent" / "chromium")

    assert done.returncode == 0, done.stderr
    assert apt_get_calls(tmp_path) == ["noninteractive update", "noninteractive install -y chromium"]


def test_a_missing_browser_stops_a_user_with_the_command_to_run(tmp_path: Path) -> None:
    done = make_browser(tmp_path, uid=1000, chromium=tmp_path / "absent" / "chromium")

    assert done.returncode != 0
    assert apt_get_calls(tmp_path) == []
    [line] = [line for line in done.stderr.splitlines() if not line.startswith("make:")]
    assert "sudo apt-get install -y chromium" in line
    assert str(tmp_path / "absent" / "chromium") in line


def test_a_browser_in_place_installs_nothing(tmp_path: Path) -> None:
    chromium = tmp_path / "chromium"
    script(chromium, "exit 0")

    done = make_browser(tmp_path, uid=0, chromium=chromium)

    assert done.returncode == 0, done.stderr
    assert apt_get_calls(tmp_path) == []
    assert done.stdout == ""
