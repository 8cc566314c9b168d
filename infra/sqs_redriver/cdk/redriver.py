"""SqsRedriver: the L3 construct that attaches the smart re-driver to a source queue and its DLQ, or
to the DLQ of a Lambda function, an EventBridge rule target or an SNS subscription
(``for_function``, ``for_rule_target``, ``for_subscription``: dead_letters.py reads them).

It checks its props (validation.py), then calls the builders: storage.py (parking lot, archive,
state table, audit trail), functions.py (the function and its schedule), access.py (what the
function, a consumer and the operator may do), consumer.py (a consumer's layers, wiring and metrics)
and monitoring.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from aws_cdk import Annotations, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from sqs_redriver.cdk.access import attach_operator_policy, grant_kit_consumer, grant_redrive_function
from sqs_redriver.cdk.consumer import (
    ConsumerFunctions,
    add_consumer_layers,
    check_event_source,
    consumer_kit_layer,
    is_function,
    warn_not_configured,
)
from sqs_redriver.cdk.dead_letters import (
    AttachedSource,
    ConsumerBreakerProps,
    read_function,
    read_rule_target,
    read_subscription,
)
from sqs_redriver.cdk.functions import (
    build_redrive_function,
    build_schedule,
    powertools_layer,
    reserve_for_drains,
)
from sqs_redriver.cdk.monitoring import alarm_retention_seconds, audit_widget, monitor
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError, settings_prop
from sqs_redriver.cdk.storage import (
    ARCHIVE_EXPIRATION,
    AUDIT_RETENTION,
    build_archive_bucket,
    build_audit_log,
    build_parking_lot,
    build_state_table,
    data_key,
    import_queue,
)
from sqs_redriver.cdk.validation import (
    Wiring,
    WiringValidation,
    check_consumer,
    check_key_arns,
    consumer_max_receive_count,
    known_retention_seconds,
    refused_at,
)
from sqs_redriver.protocol.settings import (
    BY_NAME,
    ENV_DLQ_URL,
    ENV_MAX_RECEIVE_COUNT,
    ENV_TABLE_NAME,
    OUTPUT_DESCRIPTION,
    deprecation_line,
)

CONSUMER_VERDICTS = BY_NAME["consumer_verdicts"]


class SqsRedriver(Construct):
    """Provisions the parking lot, state table, schedule and re-drive Lambda for one queue pair, or
    for the DLQ of another kind of source.

    ``source_queue``: the queue whose RedrivePolicy names ``dead_letter_queue``. For the DLQ of a
    Lambda function, an EventBridge rule target or an SNS subscription, create the re-driver with
    ``SqsRedriver.for_function``, ``for_rule_target`` or ``for_subscription`` instead, which read
    the DLQ and the target from those constructs (``dead_letter_sources``: what they read; no
    ``source_queue`` then). ``other_source_queues``: further queues whose DLQ is
    ``dead_letter_queue`` (a shared DLQ); each message goes back to the queue SQS names as its
    source. ``settings``: a ``RedriverSettings`` or a dict of its fields (``{"max_redrive_count": 3}``).
    How the re-driver is wired (its queues' redrive policies and retention, other re-drivers and
    queues of the app on its DLQ...) is checked when the app synthesizes, with every other construct,
    and refused in one error naming each mistake (validation.py). ``archive``: keep every parked
    message in an S3 bucket as well (one object each), deleted ``archive_expiration`` after it was
    written (None: never).
    ``powertools_layer_version`` (the public layer's version number) or ``powertools_layer_arn``
    (any layer) override the Powertools layer, which is by default the one of the release the
    project pins, read from its public SSM parameter at deploy time; one of them at most.

    ``encryption_key``: the customer-managed KMS key of the parking lot, archive and state table
    the construct creates; without it, a DLQ encrypted with a customer-managed key lends them its
    key. ``parking_lot`` / ``state_table``: existing ones to use instead of creating them (a
    parking lot of the DLQ's kind, with a customer-managed key if the DLQ has one; a table keyed
    by ``pk``, a string, with TTL on ``expires_at``). ``function_props``: further props of the
    re-drive function (VPC, description, extra environment variables or layers, log group...);
    those the construct sets itself are refused. ``monitoring``: a CloudWatch dashboard and
    alarms; they send to ``alarm_topic`` if given, or to a topic made here with ``alarm_email``
    subscribed. ``dlq_retention``: an imported DLQ's retention, for the oldest-age alarm (default
    4 days). ``audit_retention``: how long the audit trail of operator actions (``audit_log``, a
    log group) keeps them: a period CloudWatch Logs offers (default 365 days).

    Attributes: ``parking_lot``, ``archive`` (the S3 bucket of parked messages, None when
    disabled), ``state_table``, ``audit_log``, ``function``, ``schedule_rule``,
    ``powertools_layer`` (the function's, for other functions of the app), ``consumer_kit_layer``
    (the stack's consumer kit layer, see ``grant_consumer``) and ``encryption_key`` (the KMS key of
    what the construct created, None when it uses AWS-managed encryption), and ``dashboard``,
    ``alarms`` (name -> alarm) and ``alarm_topic`` (None, empty and None with ``monitoring=False``;
    see monitoring.py); ``source_queues`` and ``dead_letter_sources`` (one of them empty).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        source_queue: sqs.IQueue | None = None,
        dead_letter_queue: sqs.IQueue,
        other_source_queues: Sequence[sqs.IQueue] = (),
        dead_letter_sources: Sequence[AttachedSource] = (),
        settings: RedriverSettings | Mapping[str, Any] | None = None,
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
        audit_retention: Duration = AUDIT_RETENTION,
    ) -> None:
        """Build the re-driver, raising SettingsError for a prop it cannot be built with; how it is
        wired is checked when the app synthesizes, with the rest of the app (validation.py)."""
        super().__init__(scope, construct_id)
        with refused_at(self):
            self._attach(
                Wiring(
                    redriver=self,
                    settings=settings_prop(settings),
                    dead_letter_queue=dead_letter_queue,
                    source_queues=_source_queues(source_queue, other_source_queues, dead_letter_sources),
                    dead_letter_sources=tuple(dead_letter_sources),
                    parking_lot=parking_lot,
                    state_table=state_table,
                    dlq_retention=dlq_retention,
                    monitoring=monitoring,
                )
            )
            self.powertools_layer = powertools_layer(
                self, version=powertools_layer_version, arn=powertools_layer_arn
            )
            self.encryption_key = key = data_key(encryption_key, dead_letter_queue)
            self.parking_lot = parking_lot or build_parking_lot(self, dead_letter_queue, key, removal_policy)
            self.archive = (
                build_archive_bucket(self, archive_expiration, removal_policy, key) if archive else None
            )
            self.state_table = state_table or build_state_table(self, key, removal_policy)
            self.audit_log = build_audit_log(self, audit_retention, removal_policy)
            self.function = build_redrive_function(self, function_props)
            grant_redrive_function(self)
            self._consumer_functions = ConsumerFunctions(self.function, self.source_queues)
            self.schedule_rule = build_schedule(self)
            self.consumer_kit_layer = consumer_kit_layer(self)
            self._publish_deployment()
            self._monitor(monitoring, alarm_email, alarm_topic, dlq_retention)

    def _attach(self, wiring: Wiring) -> None:
        """The settings and what the re-driver is attached to, and the check of that ``wiring``
        (added to the node: it runs when the app synthesizes, with every other construct's)."""
        self.wiring = wiring
        self.settings = settings = wiring.settings
        for renamed in settings.renamed_used:
            Annotations.of(self).add_warning_v2(
                f"sqs-redriver:renamed-setting-{renamed.old_name}",
                deprecation_line(renamed.old_name, renamed.new_name),
            )
        self.source_queues = wiring.source_queues
        self.dead_letter_sources = wiring.dead_letter_sources
        self.dead_letter_queue = wiring.dead_letter_queue
        self.node.add_validation(WiringValidation(wiring, self._wirings_in_the_app))

    def _wirings_in_the_app(self) -> list[Wiring]:
        """Every re-driver's wiring in this app, in the order of the construct tree."""
        return [found.wiring for found in self.node.root.node.find_all() if isinstance(found, SqsRedriver)]

    def _publish_deployment(self) -> None:
        """One stack output naming every resource, so the operator's tool needs only the stack name."""
        document = {
            "name": self.node.path,
            "dlq_url": self.dead_letter_queue.queue_url,
            "source_queue_urls": [queue.queue_url for queue in self.source_queues],
            "dead_letter_sources": [attached.source.to_json() for attached in self.dead_letter_sources],
            "parking_lot_url": self.parking_lot.queue_url,
            "table_name": self.state_table.table_name,
            "function_name": self.function.function_name,
            "archive_bucket": self.archive.bucket_name if self.archive else "",
            "audit_log_group": self.audit_log.log_group_name,
        }
        CfnOutput(
            self, "Deployment", value=Stack.of(self).to_json_string(document), description=OUTPUT_DESCRIPTION
        )

    def _monitor(
        self,
        on: bool,
        alarm_email: str | None,
        alarm_topic: sns.ITopic | None,
        dlq_retention: Duration | None,
    ) -> None:
        """The dashboard and alarms (``monitoring``, ``dashboard``, ``alarms``, ``alarm_topic``)."""
        retention = alarm_retention_seconds(known_retention_seconds(self.dead_letter_queue), dlq_retention)
        self.monitoring = monitor(
            self, on=on, alarm_email=alarm_email, alarm_topic=alarm_topic, dlq_retention_seconds=retention
        )
        self.dashboard = self.monitoring.dashboard if self.monitoring else None
        if self.dashboard is not None:
            self.dashboard.add_widgets(audit_widget(self.audit_log))
        self.alarms = self.monitoring.alarms if self.monitoring else {}
        self.alarm_topic = self.monitoring.alarm_topic if self.monitoring else None

    def grant_consumer(
        self,
        function: lambda_.Function | iam.IGrantable,
        *,
        queue: sqs.IQueue | None = None,
        max_receive_count: int | None = None,
    ) -> dict[str, str]:
        """Let ``function``, a consumer of ``queue``, run the consumer kit, and tell the re-driver.

        The consumer gets exactly what the kit uses: ``sqs:SendMessage`` on the DLQ (it
        dead-letters terminal failures itself), ``UpdateItem`` on the state table limited to the
        keys ``VERDICTS#...`` and ``FAILURE#...`` and to the kit's attributes (no reads, no other
        records, no PutItem: see access.py), and the customer-managed KMS keys of the
        two, if any (no ``kms:ReEncrypt*``, through SQS and DynamoDB only). A ``lambda_.Function``
        of this app also gets the kit's environment (DLQ URL, table name, maxReceiveCount) and
        layers (``consumer.add_consumer_layers``; none for a container image). Any other
        consumer (an imported function, an ECS task role: an ``iam.IGrantable``) gets the
        permissions only, and a synth warning that its environment is for the caller to set.

        Synth fails if the function's SQS event source on ``queue`` (added before or after this
        call) does not report batch item failures, and warns if it finds none (consumer.py).

        ``queue``: the source queue ``function`` consumes; the construct's ``source_queue`` by
        default, or one of ``other_source_queues`` for a shared DLQ. ``max_receive_count``: that
        queue's RedrivePolicy maxReceiveCount, read from the queue when it is defined in this app
        (an explicit value must then agree with it) and required when the queue is imported.

        It also tells the re-driver its consumer reports verdicts (``_hears_verdicts``); and records
        a consumer function's name as the queue's consumer in its ``CONSUMER_FUNCTION_NAMES``, whose
        ``AWS/Lambda`` metrics ``queue_metrics`` then reads (see
        ``consumer.ConsumerFunctions`` for when an entry stays empty).

        Returns the kit's environment for this consumer (variable name -> value).

        Raises SettingsError, naming the parameter, for a queue that is not a source of this
        re-driver or a missing, out-of-range or contradicting ``max_receive_count``, and, saying
        what to do, for a function the kit cannot run in or a consumer IAM cannot grant to.
        """
        with refused_at(self):
            check_consumer(function)
            queue = queue or self._first_source_queue()
            receive_count = consumer_max_receive_count(queue, max_receive_count, self.source_queues)
        environment = {
            ENV_DLQ_URL: self.dead_letter_queue.queue_url,
            ENV_TABLE_NAME: self.state_table.table_name,
            ENV_MAX_RECEIVE_COUNT: str(receive_count),
        }
        if isinstance(function, lambda_.Function):
            with refused_at(self):
                add_consumer_layers(function)  # raises before anything is granted
        grant_kit_consumer(function, dead_letter_queue=self.dead_letter_queue, state_table=self.state_table)
        if isinstance(function, lambda_.Function):
            for name, value in environment.items():
                function.add_environment(name, value)
        else:
            warn_not_configured(function, self, environment)
        self._hears_verdicts()
        if is_function(function):
            self._watch_consumer_function(cast(lambda_.IFunction, function), queue)
        return environment

    def _hears_verdicts(self) -> None:
        """Set the re-driver's ``CONSUMER_VERDICTS`` to true, whatever the settings say: canaries
        and the trial wait for the consumer's verdicts, and a large backlog fans out to
        ``max_workers`` workers, since a failure is heard within seconds (the function's reserved
        concurrency becomes ``max_workers`` + 1; without the kit it is 1: one chain, since a
        failure is heard only when it returns, minutes later)."""
        # add_environment replaces the value settings.lambda_environment() put there.
        self.function.add_environment(str(CONSUMER_VERDICTS.env), CONSUMER_VERDICTS.to_env(True))
        reserve_for_drains(self)
        if self.monitoring is not None:
            self.monitoring.show_drains()

    def _first_source_queue(self) -> sqs.IQueue:
        """The queue a consumer consumes by default; none in a re-driver of another kind's DLQ."""
        if not self.source_queues:
            raise SettingsError(
                "grant_consumer is for a consumer of a source queue: this re-driver's dead letters "
                f"are a {self.dead_letter_sources[0].source.kind.value} source's, delivered back to "
                "their target (give that target consumer_breaker= instead)"
            )
        return self.source_queues[0]

    def _watch_consumer_function(self, function: lambda_.IFunction, queue: sqs.IQueue) -> None:
        """Check its event source at synth; read its metrics and show its errors."""
        check_event_source(function, queue)
        self._consumer_functions.add(function, queue)
        if self.monitoring is not None:
            self.monitoring.add_consumer(function, queue)

    def grant_operator(self, principal: iam.IGrantable) -> None:
        """Let ``principal`` (an IAM role, user or group, or what holds one) run the operator's tool.

        One policy of this construct, attached to the principal, with exactly what the tool calls:
        receive, change visibility, delete, send and read attributes on the DLQ and the parking lot;
        send and read attributes on each source queue, or, for a DLQ of another kind, the one
        delivery call on each source's target (a replay or an edit goes there:
        ``lambda:InvokeFunction``, ``sqs:SendMessage``, ``sns:Publish``, ``states:StartExecution``
        or ``events:PutEvents``); ``kms:Decrypt`` and ``kms:GenerateDataKey`` on the keys of
        KMS-encrypted queues and targets; decrypt, encrypt and data keys of the table's and the
        archive's customer-managed key, when they have one; five item actions on the state table
        (no Scan, no Query of the table) and ``dynamodb:Query`` on its identity index (keys only:
        ``outcome`` finds a function's dead letter on any trip there);
        ``cloudformation:DescribeStacks`` on this stack;
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
        **kwargs: Any,
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
            **kwargs,
        )

    @classmethod
    def for_function(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        dead_letter_queue: sqs.IQueue | None = None,
        consumer_breaker: ConsumerBreakerProps | None = None,
        **kwargs: Any,
    ) -> SqsRedriver:
        """Re-drive a function's failed asynchronous invocations back to it (invoked asynchronously).

        The DLQ is the function's on-failure destination (``on_failure=destinations.SqsDestination(q)``
        or ``configure_async_invoke``) or its older dead-letter queue (``dead_letter_queue=``),
        configured before this call; ``dead_letter_queue`` says which one when it has both.
        ``consumer_breaker``: the Powertools circuit breaker the function keeps, which the re-driver
        reads to hold its re-drives while it is OPEN. ``kwargs``: ``__init__``'s other props.

        The re-drive function may invoke exactly that function (and read the breaker's record).
        Raises SettingsError for a function with neither, a destination that is no SQS queue, a
        ``dead_letter_queue`` that is not the function's, a FIFO queue, or one whose maximum message
        size is below an asynchronous payload's (records would drop their payload).
        """
        attached = read_function(
            function, dead_letter_queue=dead_letter_queue, consumer_breaker=consumer_breaker
        )
        return cls._for_source(scope, construct_id, attached, kwargs)

    @classmethod
    def for_rule_target(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        rule: events.Rule,
        target: IConstruct | None = None,
        target_index: int | None = None,
        dead_letter_queue: sqs.IQueue | None = None,
        consumer_breaker: ConsumerBreakerProps | None = None,
        **kwargs: Any,
    ) -> SqsRedriver:
        """Re-drive the dead letters of one target of an EventBridge rule back to that target alone.

        ``target``: the construct the rule targets (the function, queue, topic, state machine or
        event bus passed to its ``events_targets`` wrapper), or ``target_index``: the target's place
        in the rule (``Target0`` is 0); neither for a rule with one target. The target must have a
        dead-letter queue and be added before this call. ``dead_letter_queue``: that queue, needed
        only when it is imported. ``kwargs``: ``__init__``'s other props.

        The re-drive function may make exactly the call EventBridge makes to the target
        (``lambda:InvokeFunction``, ``sqs:SendMessage``, ``sns:Publish``, ``states:StartExecution``
        or ``events:PutEvents``), on the target; never ``events:PutEvents`` on the rule's bus.
        Raises SettingsError for a target without a DLQ, of another kind (an ECS task, an API
        destination...), with an input, input path or input transformer (its DLQ holds the event
        untransformed), or that is the rule's own bus or its own DLQ.
        """
        attached = read_rule_target(
            rule,
            target=target,
            target_index=target_index,
            dead_letter_queue=dead_letter_queue,
            consumer_breaker=consumer_breaker,
        )
        return cls._for_source(scope, construct_id, attached, kwargs)

    @classmethod
    def for_subscription(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        subscription: sns.Subscription,
        dead_letter_queue: sqs.IQueue | None = None,
        consumer_breaker: ConsumerBreakerProps | None = None,
        **kwargs: Any,
    ) -> SqsRedriver:
        """Re-drive an SNS subscription's dead letters to its endpoint alone, as SNS would have
        delivered them (raw or not), never re-published to the topic.

        The DLQ is the subscription's (its redrive policy: ``dead_letter_queue=`` of
        ``SqsSubscription``, ``LambdaSubscription``...). ``kwargs``: ``__init__``'s other props.
        The re-drive function may send to the endpoint queue or invoke the endpoint function, and
        nothing on the topic. Raises SettingsError for a subscription without a DLQ or whose
        endpoint is neither an SQS queue nor a Lambda function (naming its protocol).
        """
        attached = read_subscription(
            subscription, dead_letter_queue=dead_letter_queue, consumer_breaker=consumer_breaker
        )
        return cls._for_source(scope, construct_id, attached, kwargs)

    @classmethod
    def _for_source(
        cls, scope: Construct, construct_id: str, attached: AttachedSource, kwargs: dict[str, Any]
    ) -> SqsRedriver:
        for prop in ("source_queue", "other_source_queues", "dead_letter_sources"):
            if prop in kwargs:
                raise SettingsError(f"{prop} is read from the source's constructs: omit it here")
        return cls(
            scope,
            construct_id,
            dead_letter_queue=attached.dead_letter_queue,
            dead_letter_sources=[attached],
            **kwargs,
        )


def _source_queues(
    source_queue: sqs.IQueue | None,
    others: Sequence[sqs.IQueue],
    dead_letter_sources: Sequence[AttachedSource],
) -> tuple[sqs.IQueue, ...]:
    """The source queues, or none for a DLQ of another kind: one of the two, never both."""
    if dead_letter_sources:
        if source_queue is not None or others:
            raise SettingsError(
                "source_queue (or other_source_queues) and dead_letter_sources: pass one; a DLQ holds "
                "either an SQS consumer's dead letters or another kind's"
            )
        return ()
    if source_queue is None:
        raise SettingsError(
            "source_queue is required: the queue whose RedrivePolicy names dead_letter_queue (for a "
            "Lambda function's, a rule target's or a subscription's DLQ, use SqsRedriver.for_function, "
            "for_rule_target or for_subscription)"
        )
    return (source_queue, *others)
