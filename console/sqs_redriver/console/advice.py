"""What a failed AWS call means to the operator, in the terminal or the web console: one line that
says what to do, for the failures of setup (region, credentials, endpoint, permissions) that every
command and page can meet."""

from __future__ import annotations

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSOTokenLoadError,
    TokenRetrievalError,
    UnauthorizedSSOTokenError,
)

EXPIRED_CODES = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}
)
REJECTED_CODES = frozenset(
    {"InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "InvalidAccessKeyId"}
)

NO_REGION = "no AWS region: pass --region REGION (or set AWS_REGION, or give your profile a region)"
NO_CREDENTIALS = (
    "no AWS credentials found: log in (aws sso login, aws configure) or choose a profile with "
    "--profile (or AWS_PROFILE)"
)
EXPIRED = (
    "your AWS credentials have expired: log in again (aws sso login) or refresh the session's "
    "credentials, then retry"
)
REJECTED = "AWS does not accept these credentials: check the profile (--profile, AWS_PROFILE) or the keys"


def explain(exc: BaseException) -> str | None:
    """The advice for ``exc`` or the AWS error it was raised from (an adapter's ``AwsCallError``
    keeps the botocore exception as its cause); None for a failure of another kind."""
    seen: BaseException | None = exc
    while seen is not None:
        advice = _advice(seen)
        if advice is not None:
            return advice
        seen = seen.__cause__
    return None


def _advice(exc: BaseException) -> str | None:
    if isinstance(exc, NoRegionError):
        return NO_REGION
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return NO_CREDENTIALS
    if isinstance(exc, ProfileNotFound):
        return (
            f"{exc}: check --profile (or AWS_PROFILE) against your AWS config (aws configure list-profiles)"
        )
    if isinstance(exc, TokenRetrievalError | SSOTokenLoadError | UnauthorizedSSOTokenError):
        return EXPIRED
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        endpoint = getattr(exc, "kwargs", {}).get("endpoint_url", "the endpoint")
        return (
            f"cannot reach {endpoint}: check --endpoint-url (or AWS_ENDPOINT_URL), --region and the "
            "network, then retry"
        )
    if isinstance(exc, ClientError):
        return _client_advice(exc)
    return None


def _client_advice(exc: ClientError) -> str | None:
    code = exc.response.get("Error", {}).get("Code", "")
    if code in EXPIRED_CODES:
        return EXPIRED
    if code in REJECTED_CODES:
        return REJECTED
    if code in DENIED_CODES:
        return (
            f"access denied ({exc.operation_name}): this identity may not use the re-driver's "
            "resources; use a role given them by redriver.grant_operator(role), or a profile "
            "that has one"
        )
    return None
