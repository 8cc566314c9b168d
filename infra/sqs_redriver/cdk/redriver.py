"""SqsRedriver: the L3 construct that attaches the smart re-driver to a source queue and its DLQ."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import CfnOutput, Duration, Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sqs_redriver.cdk.alarms import alarm_retention_seconds
from sqs_redriver.cdk.consumer_kit import (
    add_consumer_layers,
    consumer_kit_layer,
)
from sqs_redriver.cdk.consumer_metrics import (
    ENV_CONSUMER_FUNCTION_NAMES,
    ConsumerFunctions,
    grant_metric_reads,
)
from sqs_redriver.cdk.defaults import secure_bucket, secure_queue, secure_table
from sqs_redriver.cdk.functions import acknowledge, powertools_layer, python_function
from sqs_redriver.cdk.monitoring import monitor
from sqs_redriver.cdk.operator_access import ARCHIVE_OBJECTS, archive_logical_id, attach_operator_policy
from sqs_redriver.cdk.redriver_metrics import METRICS_NAMESPACE, service_name
from sqs_redriver.cdk.resources import (
    check_key_arns,
    check_parking_lot,
    check_state_table,
    data_key,
    function_options,
    grant_data_keys,
    grant_queue_key,
    grant_send,
    import_queue,
)
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError
from sqs_redriver.cdk.table_access import consumer_table_statement, redriver_table_statements
from sqs_redriver.protocol.deployment import OUTPUT_DESCRIPTION
from sqs_redriver.protocol.settings.kinds import reraise_as
from sqs_redriver.protocol.settings.kit import ENV_DLQ_URL, ENV_MAX_RECEIVE_COUNT, ENV_TABLE_NAME
from sqs_redriver.protocol.settings.rules import check_distinct_queues, check_queue_kinds
from sqs_redriver.protocol.settings.schema import BY_NAME, RESOURCE_ENV, URL_SEPARATOR
from sqs_redriver.protocol.sqs_limits import SQS_DEFAULT_RETENTION_SECONDS

PARKING_LOT_RETENTION = Duration.days(14)
ARCHIVE_EXPIRATION = Duration.days(365)
TTL_ATTRIBUTE = "expires_at"
PARTITION_KEY = "pk"
CONSUMER_VERDICTS = BY_NAME["consumer_verdicts"]
MAX_RECEIVE_COUNT = BY_NAME["max_receive_count"]
# The re-drive function's code: the redriver package alone (boto3 is the runtime's, Powertools the layer's).
FUNCTION_PACKAGES = ("sqs_redriver.runtime", "sqs_redriver.protocol")


class SqsRedriver(Construct):
    """Provisions the parking lot, state table, schedule and re-drive Lambda for one queue pair.

    Attributes: ``parking_lot``, ``archive`` (the S3 bucket of parked messages, None when
    disabled), ``state_table``, ``function``, ``schedule_rule``, ``powertools_layer`` (the function's,
    for other functions of the app), ``consumer_kit_layer`` (the stack's consumer kit layer, see
    ``grant_consumer``) and ``encryption_key`` (the KMS key of what the construct created, None when
    it uses AWS-managed encryption), and ``dashboard``, ``alarms`` (name -> alarm) and
    ``alarm_topic`` (None, empty and None with ``monitoring=False``; see monitoring.py).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        source_queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        other_source_queues: Sequence[sqs.IQueue] = (),
        settings: RedriverSettings | None = None,
        powertools_layer_version: int | None = None,
        powertools_layer_arn: str | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        archive: bool = True,
        archive_expiration: Duration | None = ARCHIVE_EXPIRATION,
        encryption_key: kms.IKey | None = None,
        parking_lot: sqs.IQueue | None = None,
        state_table: dynamodb.ITable | None = None,
        function_props: lambda_.FunctionOptions | None = None,
        monitoring: bool = True,
        alarm_email: str | None = None,
        alarm_topic: sns.ITopic | None = None,
        dlq_retention: Duration | None = None,
    ) -> None:
        """``other_source_queues``: further queues whose DLQ is ``dead_letter_queue`` (a shared DLQ);
        each message goes back to the queue SQS names as its source. ``archive``: keep every parked
        message in an S3 bucket as well (one object each), deleted ``archive_expiration`` after it
        was written (None: never). ``powertools_layer_version`` (the public layer's version
        number) or ``powertools_layer_arn`` (any layer) override the Powertools layer, which is by
        default the one of the release the project pins, read from its public SSM parameter at deploy
        time; one of them at most.

        ``encryption_key``: the customer-managed KMS key of the parking lot, archive and state table
        the construct creates; without it, a DLQ encrypted with a customer-managed key lends them its
        key. ``parking_lot`` / ``state_table``: existing ones to use instead of creating them (a
        parking lot of the DLQ's kind, with a customer-managed key if the DLQ has one; a table keyed
        by ``pk``, a string, with TTL on ``expires_at``). ``function_props``: further props of the
        re-drive function (VPC, description, extra environment variables or layers, log group...);
        those the construct sets itself are refused. ``monitoring``: a CloudWatch dashboard and
        alarms; they send to ``alarm_topic`` if given, or to a topic made here with ``alarm_email``
        subscribed. ``dlq_retention``: an imported DLQ's retention, for the oldest-age alarm (default
        4 days). Raises SettingsError naming the prop."""
        super().__init__(scope, construct_id)
        self.settings = settings = settings or RedriverSettings()
        sources = [source_queue, *other_source_queues]
        _validate_queues(sources, dead_letter_queue)
        _validate_expiry_margin(settings.expiry_margin_seconds, dead_letter_queue)
        if parking_lot is not None:
            check_parking_lot(parking_lot, dead_letter_queue, sources)
        if state_table is not None:
            check_state_table(state_table, partition_key=PARTITION_KEY, ttl_attribute=TTL_ATTRIBUTE)
        self.source_queues: tuple[sqs.IQueue, ...] = tuple(sources)
        self.dead_letter_queue = dead_letter_queue
        self.powertools_layer = powertools_layer(
            self, version=powertools_layer_version, arn=powertools_layer_arn
        )
        self.encryption_key = key = data_key(encryption_key, dead_letter_queue)

        self.parking_lot = parking_lot or self._parking_lot(key, removal_policy)
        self.archive = self._archive_bucket(archive_expiration, removal_policy, key) if archive else None
        self.state_table = state_table or secure_table(
            self,
            "StateTable",
            partition_key=PARTITION_KEY,
            ttl_attribute=TTL_ATTRIBUTE,
            removal_policy=removal_policy,
            encryption_key=key,
        )
        environment = {
            RESOURCE_ENV["dlq_url"]: dead_letter_queue.queue_url,
            RESOURCE_ENV["source_queue_url"]: Fn.join(URL_SEPARATOR, [queue.queue_url for queue in sources])
            if other_source_queues
            else source_queue.queue_url,
            RESOURCE_ENV["parking_lot_url"]: self.parking_lot.queue_url,
            RESOURCE_ENV["table_name"]: self.state_table.table_name,
            RESOURCE_ENV["archive_bucket"]: self.archive.bucket_name if self.archive else "",
            ENV_CONSUMER_FUNCTION_NAMES: "",  # grant_consumer fills it in
            "POWERTOOLS_SERVICE_NAME": service_name(self.node.path),
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            **settings.lambda_environment(),
        }
        self.function = python_function(
            self,
            "RedriveFunction",
            handler="sqs_redriver.runtime.handler.lambda_handler",
            packages=FUNCTION_PACKAGES,
            environment=environment,
            options=function_options(function_props, environment),
            timeout=Duration.seconds(settings.redriver_timeout_seconds),
            memory_size=settings.redriver_memory_mb,
            layer=self.powertools_layer,
            # One run at a time: the breaker and the per-message counts assume a single writer,
            # and a duplicate EventBridge delivery then waits instead of overlapping.
            reserved_concurrency=1,
        )
        # A failed run is retried by the next scheduled run, not immediately: an instant retry
        # would hit the same broken dependency and bypass the schedule's spacing.
        self.function.configure_async_invoke(retry_attempts=0, max_event_age=Duration.minutes(10))
        for rule_id in (
            "Serverless::Serverless-LambdaDLQ",
            "Serverless::Serverless-LambdaAsyncFailureDestination",
        ):
            acknowledge(
                self.function,
                rule_id,
                "The only events are the schedule's tick and a run's continuation, which carry no "
                "data: a failed or dropped run loses nothing, and the next scheduled run is its retry.",
            )
        self._grant(sources, dead_letter_queue)
        if settings.queue_metrics:
            grant_metric_reads(self, self.function)
        self._consumer_functions = ConsumerFunctions(self.function, sources)
        self.schedule_rule = events.Rule(
            self,
            "Schedule",
            description="Runs the smart DLQ re-driver",
            schedule=events.Schedule.expression(settings.schedule),
            targets=[
                targets.LambdaFunction(self.function, retry_attempts=2, max_event_age=Duration.minutes(10))
            ],
        )
        acknowledge(
            self.schedule_rule,
            "Serverless::Serverless-EventBusDLQ",
            "A scheduled tick that cannot be delivered carries no data; the next tick replaces it.",
        )
        self.consumer_kit_layer = consumer_kit_layer(self)
        self._publish_deployment()
        self.monitoring = monitor(
            self,
            on=monitoring,
            alarm_email=alarm_email,
            alarm_topic=alarm_topic,
            dlq_retention_seconds=alarm_retention_seconds(
                _retention_seconds(dead_letter_queue), dlq_retention
            ),
        )
        self.dashboard = self.monitoring.dashboard if self.monitoring else None
        self.alarms = self.monitoring.alarms if self.monitoring else {}
        self.alarm_topic = self.monitoring.alarm_topic if self.monitoring else None

    def _publish_deployment(self) -> None:
        """One stack output naming every resource, so the operator's tool needs only the stack name."""
        document = {
            "name": self.node.path,
            "dlq_url": self.dead_letter_queue.queue_url,
            "source_queue_urls": [queue.queue_url for queue in self.source_queues],
            "parking_lot_url": self.parking_lot.queue_url,
            "table_name": self.state_table.table_name,
            "function_name": self.function.function_name,
            "archive_bucket": self.archive.bucket_name if self.archive else "",
        }
        CfnOutput(
            self, "Deployment", value=Stack.of(self).to_json_string(document), description=OUTPUT_DESCRIPTION
        )

    def _parking_lot(self, key: kms.IKey | None, removal_policy: RemovalPolicy) -> sqs.Queue:
        parking_lot = secure_queue(
            self,
            "ParkingLot",
            retention_period=PARKING_LOT_RETENTION,
            removal_policy=removal_policy,
            # FIFO poison keeps its group: a FIFO DLQ parks into a FIFO parking lot.
            fifo=self.dead_letter_queue.fifo or None,
            encryption_key=key,
        )
        for rule_id in ("AwsSolutions::AwsSolutions-SQS3", "Serverless::Serverless-SQSRedrivePolicy"):
            acknowledge(
                parking_lot,
                rule_id,
                "The parking lot is the terminal queue for poison messages; nothing consumes it "
                "automatically, so a DLQ behind it would never receive anything. Messages are "
                "kept 14 days for inspection.",
            )
        return parking_lot

    def _archive_bucket(
        self, expiration: Duration | None, removal_policy: RemovalPolicy, key: kms.IKey | None
    ) -> s3.Bucket:
        bucket = secure_bucket(
            self, "Archive", expiration=expiration, removal_policy=removal_policy, encryption_key=key
        )
        acknowledge(
            bucket,
            "AwsSolutions::AwsSolutions-S1",
            "Only the re-drive function writes here (one PutObject per parked message) and people "
            "read it when investigating; CloudTrail records who did what. Access logs would need a "
            "second bucket that holds more noise than the archive itself.",
        )
        return bucket

    def grant_consumer(
        self,
        function: lambda_.Function,
        *,
        queue: sqs.IQueue | None = None,
        max_receive_count: int | None = None,
    ) -> None:
        """Let ``function``, a consumer of ``queue``, run the consumer kit, and tell the re-driver.

        The consumer gets exactly what the kit uses: ``sqs:SendMessage`` on the DLQ (it
        dead-letters terminal failures itself), ``UpdateItem`` on the state table limited to the
        keys ``VERDICTS#...`` and ``FAILURE#...`` and to the kit's attributes (no reads, no other
        records, no PutItem: see table_access.py), and the customer-managed KMS keys of the
        two, if any (no ``kms:ReEncrypt*``). Its environment gets the DLQ's URL, the table's name
        and the queue's maxReceiveCount; its layers, the stack's consumer kit layer and the public
        Powertools layer for its runtime and architecture (see
        ``consumer_kit.add_consumer_layers``: any Python runtime of ``KIT_RUNTIMES``, either architecture).

        ``queue``: the source queue ``function`` consumes; the construct's ``source_queue`` by
        default, or one of ``other_source_queues`` for a shared DLQ. ``max_receive_count``: that
        queue's RedrivePolicy maxReceiveCount, read from the queue when it is defined in this app
        (an explicit value must then agree with it) and required when the queue is imported.

        It also sets the re-driver's ``CONSUMER_VERDICTS`` to true, whatever the settings say:
        with a consumer that reports verdicts, probes wait for them; and records ``function``'s
        name as the queue's consumer in its ``CONSUMER_FUNCTION_NAMES``, whose ``AWS/Lambda``
        metrics ``queue_metrics`` then reads (see ``consumer_metrics.ConsumerFunctions`` for when
        an entry stays empty).

        Raises SettingsError, naming the parameter, for a queue that is not a source of this
        re-driver or a missing, out-of-range or contradicting ``max_receive_count``, and, saying
        what to do, for a function the kit cannot run in.
        """
        if not isinstance(function, lambda_.Function):
            raise SettingsError(
                "grant_consumer: function must be a lambda_.Function defined in this app (its "
                f"environment and layers are set here), got {type(function).__name__}"
            )
        receive_count = self._consumer_max_receive_count(queue, max_receive_count)
        add_consumer_layers(function)
        # Only SendMessage (grant_send_messages adds GetQueueAttributes and GetQueueUrl, which the
        # kit never calls: it has the URL), and what sending needs of a KMS-encrypted DLQ's key.
        self.dead_letter_queue.grant(function, "sqs:SendMessage")
        grant_queue_key(function, self.dead_letter_queue)
        grant_data_keys(function, table=self.state_table)
        function.add_to_role_policy(consumer_table_statement(self.state_table.table_arn))
        function.add_environment(ENV_DLQ_URL, self.dead_letter_queue.queue_url)
        function.add_environment(ENV_TABLE_NAME, self.state_table.table_name)
        function.add_environment(ENV_MAX_RECEIVE_COUNT, str(receive_count))
        # add_environment replaces the value settings.lambda_environment() put there.
        self.function.add_environment(str(CONSUMER_VERDICTS.env), CONSUMER_VERDICTS.to_env(True))
        self._consumer_functions.add(function, queue or self.source_queues[0])
        if self.monitoring is not None:
            self.monitoring.add_consumer(function, queue or self.source_queues[0])

    def _consumer_max_receive_count(self, queue: sqs.IQueue | None, explicit: int | None) -> int:
        """The maxReceiveCount of the consumer's queue: its RedrivePolicy's, or ``explicit``."""
        queue = queue or self.source_queues[0]
        if not any(queue is source for source in self.source_queues):
            raise SettingsError(
                "grant_consumer: queue must be this re-driver's source_queue or one of its "
                "other_source_queues: only their messages come back through its DLQ"
            )
        known = _max_receive_count(queue)
        if explicit is None:
            if known is None:
                raise SettingsError(
                    "grant_consumer: max_receive_count is required for a queue whose RedrivePolicy "
                    "is not defined in this app (an imported queue): pass its maxReceiveCount, "
                    f"{MAX_RECEIVE_COUNT.accepts}"
                )
            return known
        with reraise_as(SettingsError):
            checked = MAX_RECEIVE_COUNT.check(explicit, "grant_consumer: max_receive_count")
        if known is not None and checked != known:
            raise SettingsError(
                f"grant_consumer: max_receive_count ({checked}) contradicts the queue's "
                f"RedrivePolicy maxReceiveCount ({known}); omit it to use the queue's"
            )
        return checked

    def grant_operator(self, principal: iam.IGrantable) -> None:
        """Let ``principal`` (an IAM role, user or group, or what holds one) run the operator's tool.

        One policy of this construct, attached to the principal, with exactly what the tool calls:
        receive, change visibility, delete, send and read attributes on the DLQ and the parking lot;
        send and read attributes on each source queue; ``kms:Decrypt`` and ``kms:GenerateDataKey``
        on the keys of KMS-encrypted queues; decrypt, encrypt and data keys of the table's and the
        archive's customer-managed key, when they have one; five item actions on the state table
        (no Scan, no Query); ``cloudformation:DescribeStacks`` on this stack;
        ``cloudwatch:GetMetricStatistics`` (no resource-level permissions: ``*``); and, with an
        archive, ``s3:GetObject`` and ``s3:ListBucket`` on its ``parked/`` prefix, for the operator
        to read archived messages (``aws s3 cp``; the tool does not). The policy's cdk-nag
        findings (the two wildcards) are acknowledged on the policy itself, not on the principal.

        Raises SettingsError for a principal that cannot hold a policy (a service or account
        principal: grant those through a role they assume).
        """
        attach_operator_policy(self, principal)

    @classmethod
    def from_queue_arns(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        source_queue_arn: str,
        dead_letter_queue_arn: str,
        other_source_queue_arns: Sequence[str] = (),
        source_queue_key_arn: str | None = None,
        dead_letter_queue_key_arn: str | None = None,
        other_source_queue_key_arns: Sequence[str | None] = (),
        **kwargs: object,
    ) -> SqsRedriver:
        """Attach the re-driver to queues that already exist, by ARN.

        ``..._key_arn``: the ARN of a queue's customer-managed KMS key, if it has one (SQS does not
        say at synth); the function (and ``grant_consumer``'s consumers, for the DLQ) is then granted
        the key with the queue, and the DLQ's key encrypts what the construct creates unless
        ``encryption_key`` is given. ``other_source_queue_key_arns``: one per other source, in order.
        """
        check_key_arns(other_source_queue_arns, other_source_queue_key_arns)
        key_arns = other_source_queue_key_arns or [None] * len(other_source_queue_arns)
        holder = Construct(scope, f"{construct_id}Imports")
        return cls(
            scope,
            construct_id,
            source_queue=import_queue(holder, "Source", source_queue_arn, source_queue_key_arn),
            dead_letter_queue=import_queue(
                holder, "DeadLetter", dead_letter_queue_arn, dead_letter_queue_key_arn
            ),
            other_source_queues=[
                import_queue(holder, f"Source{index}", arn, key_arn)
                for index, (arn, key_arn) in enumerate(zip(other_source_queue_arns, key_arns, strict=True), 2)
            ],
            **kwargs,  # type: ignore[arg-type]
        )

    def _grant(self, sources: Sequence[sqs.IQueue], dead_letter_queue: sqs.IQueue) -> None:
        """Least privilege: consume the DLQ, send to the sources and parking lot, use the table."""
        dead_letter_queue.grant_consume_messages(self.function)  # and kms:Decrypt of its key
        for queue in [*sources, self.parking_lot]:
            grant_send(self.function, queue)
        # Each operation on the records it makes it on (table_access.py): no Scan, no Query,
        # no operator record written.
        for statement in redriver_table_statements(
            self.state_table.table_arn, dead_letter_queue.queue_url, [queue.queue_url for queue in sources]
        ):
            self.function.add_to_role_policy(statement)
        grant_data_keys(self.function, table=self.state_table, archive=self.archive)
        # Continuation: a run hands over to the next by invoking its own function. A separate policy,
        # not the role's default one, which the function depends on (that would be a cycle).
        role = self.function.role
        assert role is not None, "python_function gives every function a role"
        iam.Policy(
            self,
            "ContinuationPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn])
            ],
        )
        if self.archive is not None:
            # PutObject only: grant_put would add tagging, legal hold and retention actions.
            self.function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:PutObject"], resources=[self.archive.arn_for_objects(ARCHIVE_OBJECTS)]
                )
            )
            assert self.function.role is not None
            acknowledge(
                self.function.role,
                f"AwsSolutions::AwsSolutions-IAM5[Resource::<{archive_logical_id(self)}.Arn>/{ARCHIVE_OBJECTS}]",
                "One object per parked message under a key the function makes up at run time "
                "(source, date, identity, message id): PutObject on the archive's parked/ prefix only.",
            )


def _validate_queues(sources: Sequence[sqs.IQueue], dead_letter_queue: sqs.IQueue) -> None:
    """The schema's queue rules (each queue in one role, all of one kind), then the CDK-only ones."""
    labelled = [("source_queue", sources[0])]
    labelled += [(f"other_source_queues[{index}]", queue) for index, queue in enumerate(sources[1:])]
    dlq = ("dead_letter_queue", dead_letter_queue)
    with reraise_as(SettingsError):
        # A queue's ARN token is the same string for the same queue; an imported queue's ARN is literal.
        check_distinct_queues([(label, queue.queue_arn) for label, queue in [dlq, *labelled]])
        check_queue_kinds(
            (dlq[0], dead_letter_queue.fifo), [(label, queue.fifo) for label, queue in labelled]
        )
    for label, queue in labelled:
        _validate_source(label, queue, dead_letter_queue)


def _validate_source(label: str, source_queue: sqs.IQueue, dead_letter_queue: sqs.IQueue) -> None:
    source_retention = _retention_seconds(source_queue)
    dlq_retention = _retention_seconds(dead_letter_queue)
    standard = not dead_letter_queue.fifo  # a FIFO DLQ restarts the retention clock on arrival
    if (
        standard
        and source_retention is not None
        and dlq_retention is not None
        and dlq_retention <= source_retention
    ):
        raise SettingsError(
            f"dead_letter_queue retention ({dlq_retention} s) must be longer than {label} "
            f"retention ({source_retention} s): a standard queue's message keeps its original "
            "enqueue time in the DLQ, so a shorter retention deletes it before it can be re-driven"
        )
    if isinstance(source_queue, sqs.Queue) and source_queue.dead_letter_queue is not None:
        if source_queue.dead_letter_queue.queue is not dead_letter_queue:
            raise SettingsError(f"{label}'s RedrivePolicy points to a different dead_letter_queue")


def _validate_expiry_margin(margin_seconds: int, dead_letter_queue: sqs.IQueue) -> None:
    """A margin as long as the DLQ's retention would park every message on sight (an imported
    queue's retention is unknown here: the Lambda reads it at run time)."""
    retention = _retention_seconds(dead_letter_queue)
    if retention is not None and margin_seconds >= retention:
        raise SettingsError(
            f"expiry_margin_seconds ({margin_seconds}) must be shorter than the dead_letter_queue's "
            f"retention ({retention} s): messages are parked from retention - margin of age on"
        )


def _max_receive_count(queue: sqs.IQueue) -> int | None:
    """The RedrivePolicy maxReceiveCount of a queue defined in this app; None if not visible."""
    if not isinstance(queue, sqs.Queue) or queue.dead_letter_queue is None:
        return None
    count = queue.dead_letter_queue.max_receive_count
    return None if Token.is_unresolved(count) else int(count)


def _retention_seconds(queue: sqs.IQueue) -> int | None:
    """The retention of a queue defined in this app; None for imported queues or tokens."""
    if not isinstance(queue, sqs.Queue):
        return None
    cfn = queue.node.default_child
    assert isinstance(cfn, sqs.CfnQueue)
    retention = cfn.message_retention_period
    if retention is None:
        return SQS_DEFAULT_RETENTION_SECONDS
    if Token.is_unresolved(retention):
        return None
    return int(retention)
