"""Where the operator's tool sends its calls: the standard credential chain, or a profile, region
and endpoint, checked on first use so that a malformed one is one line naming the option."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import InvalidRegionError
from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url, validate_region_name

from sqs_redriver.console.shown import inert_str

# An operator waits for the answer: retry throttling, but not for long.
TOOL_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)


class BadConnection(ValueError):
    """``--endpoint-url`` or ``--region`` is not of a form AWS's clients take (exit code 2); the
    message names the option."""


@dataclass(frozen=True)
class Connection:
    """Where the tool's calls go: the standard credential chain, or a profile, region, endpoint.
    The endpoint and the region are checked on first use (BadConnection), so ``--help`` works."""

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None

    @cached_property
    def _session(self) -> boto3.Session:
        self._check()
        return boto3.Session(profile_name=self.profile, region_name=self.region)

    def _check(self) -> None:
        if self.region is not None:
            try:
                validate_region_name(self.region)
            except InvalidRegionError:
                named = inert_str(self.region)
                raise BadConnection(
                    f"--region (or AWS_REGION) {named!r} is not a region name (like eu-west-1)"
                ) from None
        url = self.endpoint_url
        if url is not None and not _is_endpoint(url):
            raise BadConnection(
                f"--endpoint-url (or AWS_ENDPOINT_URL) {inert_str(url)!r} is not an http:// or https:// "
                "URL with a host (like http://localhost:4566)"
            )

    def knows_region(self) -> bool:
        """Whether botocore knows the connection's region in some partition (a region it does not
        know still gets an endpoint: this only explains a failure)."""
        session = self._session
        return any(
            self.region_name in session.get_available_regions("sqs", partition)
            for partition in session.get_available_partitions()
        )

    @property
    def region_name(self) -> str | None:
        """The region calls go to: ``region``, else the profile's or the environment's."""
        return self._session.region_name

    def client(self, service: str, *, region: str | None = None, config: Config | None = None) -> Any:
        # boto3-stubs types client() per literal service name; the tool asks for its clients by name.
        session: Any = self._session
        try:
            return session.client(
                service, region_name=region, endpoint_url=self.endpoint_url, config=config or TOOL_CONFIG
            )
        except ValueError as exc:  # an endpoint from the environment or the profile botocore refuses
            raise BadConnection(
                f"the endpoint for {service} (AWS_ENDPOINT_URL_{service.upper()}, or endpoint_url in the "
                f"profile) is not one AWS's clients take: {inert_str(str(exc))}"
            ) from None


def _is_endpoint(url: str) -> bool:
    """An http(s) URL with a host and a port in range, as botocore's clients take it."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return False
    valid = is_valid_endpoint_url(url) or is_valid_ipv6_endpoint_url(url)
    return parts.scheme in ("http", "https") and bool(valid)
