"""local_aws.environment: os.environ changed for a while and restored exactly, without ever being
emptied on the way (the kept demo's web console makes its clients in other threads meanwhile)."""

from __future__ import annotations

import os

import pytest

from local_aws.environment import environment


class WatchedEnviron(dict[str, str]):
    """A stand-in for os.environ that remembers which names were ever removed, and any clear()."""

    def __init__(self, values: dict[str, str]) -> None:
        super().__init__(values)
        self.removed: list[str] = []

    def __delitem__(self, name: str) -> None:
        self.removed.append(name)
        super().__delitem__(name)

    def pop(self, name: str, *default: str) -> str:  # type: ignore[override]
        if name in self:
            self.removed.append(name)
        return super().pop(name, *default)

    def clear(self) -> None:
        self.removed.extend(self)
        super().clear()


def test_everything_is_put_back_as_it_was() -> None:
    watched = WatchedEnviron({"KEPT": "1", "CHANGED": "before", "UNSET": "there"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", watched)
        with environment({"CHANGED": "during", "ADDED": "new"}, unset=["UNSET"]):
            assert dict(os.environ) == {"KEPT": "1", "CHANGED": "during", "ADDED": "new"}
            os.environ["INSIDE"] = "set by the code that ran"
        assert dict(os.environ) == {"KEPT": "1", "CHANGED": "before", "UNSET": "there"}


def test_a_name_left_alone_is_never_removed_on_the_way() -> None:
    watched = WatchedEnviron({"AWS_ACCESS_KEY_ID": "demo", "CHANGED": "before"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", watched)
        with environment({"CHANGED": "during", "ADDED": "new"}):
            pass
    assert "AWS_ACCESS_KEY_ID" not in watched.removed
    assert watched.removed == ["ADDED"]
