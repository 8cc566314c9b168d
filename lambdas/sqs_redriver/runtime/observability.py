"""Logger, Metrics and Tracer, created once and shared by the re-driver's modules."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
metrics = Metrics()
tracer = Tracer()
