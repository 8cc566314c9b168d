"""The re-driver as CDK constructs: ``SqsRedriver`` (attach it to a team's queues), its settings, and
the demo stack. ``from sqs_redriver.cdk import SqsRedriver``."""

from sqs_redriver.cdk.redriver import SqsRedriver
from sqs_redriver.cdk.settings import RedriverSettings, SettingsError

__all__ = ["RedriverSettings", "SettingsError", "SqsRedriver"]
