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
from botocore.parsers import ResponseParserError

from sqs_redriver.console.tool import Connection

EXPIRED_CODES = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}
)
REJECTED_CODES = frozenset(
    {
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "IncompleteSignature",
        "InvalidAccessKeyId",
        "MissingAuthenticationToken",
        "MissingAuthenticationTokenException",
    }
)

# Raised before any request: no region or credentials anywhere, so every call would fail alike.
SETUP_ERRORS = (
    NoCredentialsError,
    PartialCredentialsError,
    NoRegionError,
    ProfileNotFound,
    TokenRetrievalError,
    SSOTokenLoadError,
    UnauthorizedSSOTokenError,
)

NO_REGION = "no AWS region: pass --region REGION (or set AWS_REGION, or give your profile a region)"
NO_CREDENTIALS = (
    "no AWS credentials found: log in (aws sso login, aws configure) or choose a profile with "
    "--profile (or AWS_PROFILE)"
)
NO_CREDENTIALS_LOCALLY = (
    f"{NO_CREDENTIALS}; a local endpoint (moto, LocalStack) takes any AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY"
)
EXPIRED = (
    "your AWS credentials have expired: log in again (aws sso login) or refresh the session's "
    "credentials, then retry"
)
REJECTED = "AWS does not accept these credentials: check the profile (--profile, AWS_PROFILE) or the keys"


def explain(exc: BaseException, connection: Connection | None = None) -> str | None:
    """The advice for ``exc`` or the AWS error it was raised from (an adapter's ``AwsCallError``
    keeps the botocore exception as its cause); None for a failure of another kind. The
    ``connection`` the call went through names the endpoint and the region in it."""
    seen: BaseException | None = exc
    while seen is not None:
        advice = _advice(seen) or _not_aws(seen, connection)
        if advice == NO_CREDENTIALS and connection is not None and connection.endpoint_url:
            return NO_CREDENTIALS_LOCALLY
        if advice is not None:
            return _unknown_region(seen, connection) or advice
        seen = seen.__cause__
    return None


def _not_aws(exc: BaseException, connection: Connection | None) -> str | None:
    """An answer no AWS service gives: a body botocore cannot parse, or an HTTP error without an
    AWS error code (a web server, or a local endpoint that does not serve the region)."""
    if isinstance(exc, ResponseParserError):
        answered = "answered in a form AWS does not use"
    elif isinstance(exc, ClientError) and (_code(exc).isdigit() or not _code(exc)):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", _code(exc) or "?")
        answered = f"answered {exc.operation_name} with HTTP {status} and no AWS error"
    else:
        return None
    where = _endpoint(connection)
    region = connection.region_name if connection is not None else None
    serves = f", or one that does not serve region {region}" if region else ""
    return (
        f"{where} {answered}: not an AWS endpoint{serves}; check --endpoint-url (or AWS_ENDPOINT_URL) "
        "and --region"
    )


def _unknown_region(exc: BaseException, connection: Connection | None) -> str | None:
    """AWS itself out of reach in a region botocore does not know: most likely a typo."""
    if not isinstance(exc, EndpointConnectionError | ConnectTimeoutError) or connection is None:
        return None
    region = connection.region_name
    if connection.endpoint_url or region is None or connection.knows_region():
        return None
    return (
        f"cannot reach AWS in region {region}, a region botocore does not know: check --region (or "
        "AWS_REGION)"
    )


def _endpoint(connection: Connection | None) -> str:
    if connection is None:
        return "the endpoint"
    return connection.endpoint_url or f"AWS in region {connection.region_name}"


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


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
