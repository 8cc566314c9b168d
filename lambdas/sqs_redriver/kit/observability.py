"""The kit's logger: Powertools Logger, so its lines join the consumer's structured logs (same
service name, same handler)."""

from aws_lambda_powertools import Logger

logger = Logger()
