"""What the operator's tool raises, each error's docstring saying when: those the command line
(cli/app.py: an exit code) and the pages (web/server.py: a status) report as one line, and those
the library turns into one of them or into a problem it shows (``NotAQueueName``,
``CorruptReplay``)."""

from __future__ import annotations


class UsageError(ValueError):
    """The command line does not say enough (exit code 2)."""


class NotFound(LookupError):
    """The command line names a group, fingerprint or message that does not exist (exit code 1);
    the message says what does."""


class BadConnection(ValueError):
    """``--endpoint-url`` or ``--region`` is not of a form AWS's clients take (exit code 2); the
    message names the option."""


class DeploymentNotFound(LookupError):
    """No re-driver (or more than one, and none chosen) among a stack's outputs, or an output
    that does not describe one (a field the message names)."""


class AuditUnavailable(RuntimeError):
    """The action could not be recorded, so it was not done."""


class Conflict(RuntimeError):
    """A run changed what the action meant to change, just now: nothing was written."""


class NotAQueueName(ValueError):
    """A string that names no queue (the message says what is wrong with it)."""


class CorruptReplay(ValueError):
    """A replay record or index that fails validation: its key, the field and the problem."""


class UnreadableReplay(NotFound):
    """A replay's record exists but cannot be read (exit code 1, one line naming the field)."""


class DocumentError(ValueError):
    """An edited document SQS or the re-driver would refuse: ``field`` names where, the message what
    is allowed."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class Unchanged(ValueError):
    """The edited document says what the message already says."""
