"""The re-driver as CDK constructs: ``SqsRedriver`` (attach it to a team's queues, or to a
function's, a rule target's or a subscription's DLQ), its settings, a target's Powertools breaker,
and the demo stack. ``from sqs_redriver.cdk import SqsRedriver``."""

from sqs_redriver.cdk.dead_letters import ConsumerBreakerProps
from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError

__all__ = ["ConsumerBreakerProps", "RedriverSettings", "SettingsError", "SqsRedriver"]
