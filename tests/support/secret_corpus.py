"""Real-looking secrets in the exception messages that carry them in real consumers (psycopg,
SQLAlchemy, pyodbc, redis-py, requests, PyJWT, cryptography, paramiko, PyGithub, slack_sdk, stripe,
botocore), and in the errors AWS writes into a dead letter of another service (a function's, a
rule target's), each with the parts that must never leave the consumer or the re-driver.

The tokens are fake and built when the module loads (a fixed seed), their prefixes joined to them
here rather than written whole, so no secret scanner mistakes this file for a leak.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "+/"
BASE64URL = ALNUM + "-_"
_random = random.Random(31)


def fake(length: int, alphabet: str = ALNUM) -> str:
    return "".join(_random.choice(alphabet) for _ in range(length))


def digits(length: int) -> str:
    return fake(length, string.digits)


@dataclass(frozen=True)
class Secret:
    """An exception message (``text``) holding a secret of ``kind``, and the parts of it that must
    never appear in anything the consumer writes (``sensitive``)."""

    kind: str
    text: str
    sensitive: tuple[str, ...]

    def __str__(self) -> str:  # pytest ids
        return self.kind


def _jwt(claims_length: int, signature_length: int) -> tuple[str, str]:
    """(a JWT, its claims and signature): the header names the algorithm only."""
    header = "eyJ" + "hbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6Ik" + fake(10, BASE64URL)
    rest = "eyJ" + fake(claims_length, BASE64URL) + "." + fake(signature_length, BASE64URL)
    return f"{header}.{rest}", rest


def _pem_body(lines: int) -> tuple[str, ...]:
    return tuple(fake(64, BASE64) for _ in range(lines)) + (fake(24, BASE64) + "==",)


def _url_passwords() -> list[Secret]:
    kind = "url password with /"
    variants = [
        (
            "pa/ss#w0rd/" + fake(6),
            'connection to server at "db.internal" (10.0.3.7), port 5432 failed: FATAL:  database '
            '"orders" does not exist (dsn: postgresql://orders_app:{}@db.internal:5432/orders)',
        ),
        (
            fake(5) + "/" + fake(4) + ":" + fake(3),
            '(psycopg2.OperationalError) could not translate host name "db" to address: Name or service '
            "not known [url: postgresql+psycopg2://app:{}@db:5432/app] (Background on this error at: "
            "https://sqlalche.me/e/20/e3q8)",
        ),
        (
            "s3cr/et@" + fake(6),
            "Error 111 connecting to redis://:{}@cache.internal:6379/0. Connection refused.",
        ),
        (
            "Tr0ub4dor/" + fake(8),
            "pika.exceptions.AMQPConnectionError: amqps://mq_user:{}@b-1234.mq.eu-west-1.amazonaws.com:5671 "
            "unreachable",
        ),
        (
            fake(4) + "/" + fake(4) + "/" + fake(4),
            "pymongo.errors.ConfigurationError: The DNS query name does not exist: "
            '"mongodb+srv://svc:{}@cluster0.abcde.mongodb.net/?retryWrites=true"',
        ),
    ]
    return [Secret(kind, text.format(password), (password,)) for password, text in variants]


def _odbc_passwords() -> list[Secret]:
    plain, braced, lower, long_form = (
        "Hunt3r2-" + fake(8),
        "p;w" + fake(6) + "!x",
        fake(10),
        "myP@ss" + fake(6),
    )
    return [
        Secret(
            "odbc Pwd=",
            "('28000', \"[28000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Login failed for user "
            "'app'. (18456) (SQLDriverConnect)\") connection string: DRIVER={ODBC Driver 18 for SQL Server};"
            f"SERVER=tcp:sql.internal,1433;UID=app;PWD={plain};Encrypt=yes",
            (plain,),
        ),
        Secret(
            "odbc Pwd=",
            "[IM002] [unixODBC][Driver Manager]Data source name not found: Driver={PostgreSQL Unicode};"
            f"Server=db;Database=orders;Uid=app;Pwd={{{braced}}};",
            (braced,),
        ),
        Secret(
            "odbc Pwd=",
            f"pyodbc.InterfaceError: connect failed: server=db;uid=reporting;pwd={lower};database=dw",
            (lower,),
        ),
        Secret(
            "odbc Pwd=",
            "Login failed. Connection string: Server=myServerAddress;Database=myDataBase;"
            f"User Id=myUsername;Password={long_form};",
            (long_form,),
        ),
    ]


def _jwts() -> list[Secret]:
    signed, signed_rest = _jwt(120, 43)
    short, short_rest = _jwt(40, 86)
    query, query_rest = _jwt(200, 342)
    unsigned_header = "eyJhbGciOiJub25lIn0"
    unsigned_rest = "eyJ" + fake(30, BASE64URL) + "."
    return [
        Secret(
            "bare JWT",
            f"jwt.exceptions.InvalidSignatureError: Signature verification failed for token {signed}",
            (signed_rest,),
        ),
        Secret("bare JWT", f"401 Unauthorized: id_token {short} has expired", (short_rest,)),
        Secret(
            "bare JWT",
            f"404 Client Error: Not Found for url: https://api.example.com/v1/orders?jwt={query}&page=2",
            (query_rest,),
        ),
        Secret(
            "bare JWT",
            f"rejected unsigned token {unsigned_header}.{unsigned_rest} (alg none)",
            (unsigned_rest,),
        ),
    ]


def _pem_keys() -> list[Secret]:
    rsa, openssh, pkcs8, encrypted, cut = (_pem_body(n) for n in (4, 3, 2, 3, 5))
    dek_info = "DEK-Info: AES-256-CBC," + fake(32, "0123456789ABCDEF")
    return [
        Secret(
            "PEM private key",
            "ValueError: Could not deserialize key data. The data may be in an incorrect format, it may "
            "be encrypted with an unsupported algorithm, or it may be an unsupported key type: "
            "b'-----BEGIN RSA PRIVATE KEY-----\\n" + "\\n".join(rsa) + "\\n-----END RSA PRIVATE KEY-----\\n'",
            rsa,
        ),
        Secret(
            "PEM private key",
            "paramiko.ssh_exception.SSHException: not a valid OPENSSH private key file\n"
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            + "\n".join(openssh)
            + "\n-----END OPENSSH PRIVATE KEY-----\nusing key file /var/task/deploy_key",
            openssh,
        ),
        Secret(
            "PEM private key",
            '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
            + "\\n".join(pkcs8)
            + '\\n-----END PRIVATE KEY-----\\n"} is not valid JSON for a credentials file',
            pkcs8,
        ),
        Secret(
            "PEM private key",
            "Bad decrypt. Incorrect password? -----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
            f"{dek_info}\n\n" + "\n".join(encrypted) + "\n-----END EC PRIVATE KEY-----",
            (*encrypted, dek_info),
        ),
        Secret(
            "PEM private key",
            "could not load signing key: -----BEGIN ENCRYPTED PRIVATE KEY-----\n" + "\n".join(cut),
            cut,
        ),
    ]


def _github_tokens() -> list[Secret]:
    pat, server, oauth, user, refresh = (fake(36) for _ in range(5))
    fine_grained = "11" + fake(20, string.ascii_uppercase + string.digits) + "_" + fake(59)
    return [
        Secret(
            "GitHub token",
            'github.GithubException.BadCredentialsException: 401 {"message": "Bad credentials", '
            f'"documentation_url": "https://docs.github.com/rest"}} (token ghp_{pat})',
            (pat,),
        ),
        Secret(
            "GitHub token",
            "Cloning into 'orders'... fatal: Authentication failed for "
            f"'https://x-access-token:ghs_{server}@github.com/acme/orders.git/'",
            (server,),
        ),
        Secret(
            "GitHub token",
            "401 Client Error: Unauthorized for url: https://api.github.com/user "
            f"(Authorization: token gho_{oauth})",
            (oauth,),
        ),
        Secret(
            "GitHub token",
            f"401 Bad credentials: token ghu_{user} was revoked; refresh with ghr_{refresh}",
            (user, refresh),
        ),
        Secret(
            "GitHub token",
            "push to origin failed: remote: Permission to acme/orders.git denied to "
            f"github_pat_{fine_grained}.",
            (fine_grained,),
        ),
    ]


def _slack_tokens() -> list[Secret]:
    bot = f"{digits(13)}-{digits(13)}-{fake(24)}"
    user = f"{digits(12)}-{digits(13)}-{digits(13)}-{fake(32, '0123456789abcdef')}"
    workspace = f"2-{digits(9)}-{digits(11)}-{digits(13)}-{fake(18, '0123456789abcdef')}"
    legacy = f"{digits(10)}-{digits(10)}-{digits(10)}-{fake(10, '0123456789abcdef')}"
    hook, workflow = fake(24), fake(24)
    team, bot_id = (
        "T" + fake(10, string.ascii_uppercase + string.digits),
        "B" + fake(10, string.ascii_uppercase),
    )
    return [
        Secret(
            "Slack token",
            "slack_sdk.errors.SlackApiError: The request to the Slack API failed. (url: "
            "https://www.slack.com/api/chat.postMessage)\nThe server responded with: {'ok': False, "
            f"'error': 'invalid_auth'}} for xoxb-{bot}",
            (bot,),
        ),
        Secret("Slack token", f"users.info failed with token xoxp-{user}: token_revoked", (user,)),
        Secret("Slack token", f"oauth.access returned xoxa-{workspace} for a retired app", (workspace,)),
        Secret("Slack token", f"legacy token xoxs-{legacy} is no longer accepted", (legacy,)),
        Secret(
            "Slack webhook",
            "HTTPSConnectionPool(host='hooks.slack.com', port=443): Max retries exceeded with url: "
            f"/services/{team}/{bot_id}/{hook} (Caused by NewConnectionError('<urllib3.connection."
            "HTTPSConnection object at 0x7f3c>: Failed to establish a new connection: [Errno -3] "
            "Temporary failure in name resolution'))",
            (hook,),
        ),
        Secret(
            "Slack webhook",
            f"POST https://hooks.slack.com/services/{team}/{bot_id}/{hook} returned 404: no_service",
            (hook,),
        ),
        Secret(
            "Slack webhook",
            f"webhook https://hooks.slack.com/workflows/{team}/A04J3BAF7AA/4426602318/{workflow} failed",
            (workflow,),
        ),
    ]


def _stripe_keys() -> list[Secret]:
    live, restricted, test, restricted_test = "51" + fake(97), fake(24), "51" + fake(97), fake(32)
    return [
        Secret(
            "Stripe key",
            "stripe.error.AuthenticationError: Request req_Gh7pQ2: Invalid API Key provided: "
            f"sk_{'live'}_{live}",
            (live,),
        ),
        Secret(
            "Stripe key",
            f"stripe.error.PermissionError: The provided key 'rk_{'live'}_{restricted}' does not have "
            "access to account 'acct_1032D82eZvKYlo2C'",
            (restricted,),
        ),
        Secret(
            "Stripe key",
            "No such customer: 'cus_9s6XKzkNRiz8i3'; a similar object exists in live mode, but a test "
            f"mode key (sk_{'test'}_{test}) was used to make this request.",
            (test,),
        ),
        Secret("Stripe key", f"refund failed with rk_{'test'}_{restricted_test}", (restricted_test,)),
    ]


def _spoken_passwords() -> list[Secret]:
    sql, said, quoted, mysql, was = (
        "hunter2" + fake(4),
        "Corr3ct-Horse" + fake(4),
        "S3cr3t Phrase " + fake(4),
        "s3cr3t!" + fake(4),
        "Tr0ub4dor&" + fake(3),
    )
    return [
        Secret(
            "password in words",
            'psycopg.errors.SyntaxError: syntax error at or near "VALID"\n'
            f"LINE 1: CREATE ROLE app LOGIN PASSWORD {sql} VALID UNTIL",
            (sql,),
        ),
        Secret(
            "password in words",
            f"ValueError: login for 'svc-orders' failed: the password is {said}, expected a rotated one",
            (said,),
        ),
        Secret(
            "password in words",
            "psycopg.errors.InsufficientPrivilege: permission denied to "
            f"ALTER USER app WITH PASSWORD '{quoted}'",
            (quoted,),
        ),
        Secret(
            "password in words",
            '(1064, "You have an error in your SQL syntax; check the manual that corresponds to your '
            f"MySQL server version for the right syntax to use near 'IDENTIFIED BY {mysql}' at line 1\")",
            (mysql,),
        ),
        Secret("password in words", f"Password was {was} but the account is locked", (was,)),
    ]


def _earlier_kinds() -> list[Secret]:
    key_id, secret_key, bearer = (
        "AKIA" + fake(16, string.ascii_uppercase + string.digits),
        fake(40, BASE64),
        fake(40),
    )
    return [
        Secret(
            "AWS keys",
            "botocore.exceptions.ClientError: An error occurred (InvalidClientTokenId) when calling the "
            f"GetCallerIdentity operation: The security token included in the request is invalid "
            f"(aws_access_key_id={key_id}, aws_secret_access_key={secret_key})",
            (key_id, secret_key),
        ),
        Secret(
            "bearer token",
            f"403 Client Error: Forbidden for url: https://api.example.com/orders "
            f"(headers: {{'Authorization': 'Bearer {bearer}'}})",
            (bearer,),
        ),
    ]


def _source_errors() -> list[Secret]:
    """As a function's ``errorMessage``, Lambda's ``ErrorMessage`` or EventBridge's
    ``ERROR_MESSAGE`` carry them: a database URL with its password, a bare AWS access key id, a
    bearer token in words."""
    password, key_id, token = fake(14), "AKIA" + fake(16, string.ascii_uppercase + string.digits), fake(48)
    return [
        Secret(
            "database URL",
            "RequestId: 5d1f7a2c Error: Runtime exited with error: OperationalError: could not connect "
            f"to postgres://orders:{password}@orders-db.cluster-c9.eu-west-1.rds.amazonaws.com:5432/orders",
            (password,),
        ),
        Secret(
            "AWS access key id",
            f"AccessDenied: User AIDA{fake(16, string.ascii_uppercase)} with key {key_id} is not "
            "authorized to perform: sqs:SendMessage",
            (key_id,),
        ),
        Secret(
            "bearer token",
            "Failed to send the event to the target: HTTP 401 from https://hooks.example.com "
            f"(sent Bearer {token})",
            (token,),
        ),
    ]


CORPUS: tuple[Secret, ...] = tuple(
    _url_passwords()
    + _odbc_passwords()
    + _jwts()
    + _pem_keys()
    + _github_tokens()
    + _slack_tokens()
    + _stripe_keys()
    + _spoken_passwords()
    + _earlier_kinds()
    + _source_errors()
)


def leaks(output: str, secrets: tuple[Secret, ...] = CORPUS) -> list[str]:
    """The sensitive parts of ``secrets`` that ``output`` shows."""
    return [part for secret in secrets for part in secret.sensitive if part in output]
