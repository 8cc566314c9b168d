"""What a view works with: the console's tool (one per server: the command line's options)."""

from __future__ import annotations

from flask import current_app

from sqs_redriver.console.tool import Tool

TOOL = "sqs_redriver.tool"


def tool() -> Tool:
    """The tool of the console serving this request."""
    found: Tool = current_app.extensions[TOOL]
    return found
