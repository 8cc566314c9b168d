"""Limits of AWS (SQS, and the DynamoDB and S3 keys) the re-driver and its construct build on, each
written once.

From the SQS Developer Guide's quotas (and the one Lambda quota they meet). The settings schema
bounds its ranges with them, backoff caps delays and holds with them, and the CDK side checks queue
properties against them.
"""

# Timeout of a Lambda function: at most 15 minutes, so a run acts on a message it received within that.
LAMBDA_MAX_TIMEOUT_SECONDS = 900
# DelaySeconds of a message (SendMessage, SendMessageBatch) and of a queue: 0 to 15 minutes.
SQS_MAX_DELAY_SECONDS = 900
# VisibilityTimeout of a queue, a receive or ChangeMessageVisibility: 0 to 12 hours.
SQS_MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200
# WaitTimeSeconds of a long-poll ReceiveMessage: 0 to 20 seconds.
SQS_MAX_RECEIVE_WAIT_SECONDS = 20
# Messages one ReceiveMessage returns, or one batch call carries: 1 to 10.
SQS_MAX_BATCH_SIZE = 10
# Message attributes of one message, and bytes of one message (body and attributes) or batch.
SQS_MAX_MESSAGE_ATTRIBUTES = 10
SQS_MAX_MESSAGE_BYTES = 1_048_576
# maxReceiveCount of a RedrivePolicy: 1 to 1,000.
SQS_MAX_RECEIVE_COUNT = 1_000
# MessageRetentionPeriod of a queue created without one: 4 days.
SQS_DEFAULT_RETENTION_SECONDS = 4 * 86_400
# A DynamoDB partition key: at most 2,048 bytes (UTF-8). An S3 object key: at most 1,024 bytes.
DYNAMODB_MAX_KEY_BYTES = 2_048
S3_MAX_KEY_BYTES = 1_024
# A message attribute's name: at most 256 of A-Z a-z 0-9 _ - . (no leading, trailing or double
# period; none starting with AWS. or Amazon., in any case). Its data type: String, Number or Binary,
# with an optional custom label after a period, at most 256 in all. A Number: at most 38 digits.
SQS_MAX_ATTRIBUTE_NAME_CHARS = 256
SQS_ATTRIBUTE_NAME_CHARACTERS = "A-Za-z0-9_.-"
SQS_RESERVED_ATTRIBUTE_PREFIXES = ("aws.", "amazon.")
SQS_MAX_ATTRIBUTE_TYPE_CHARS = 256
SQS_MAX_NUMBER_DIGITS = 38
# The characters a body or a String attribute may hold (XML 1.0's): #x9 #xA #xD, #x20 to #xD7FF,
# #xE000 to #xFFFD, #x10000 to #x10FFFF; anything else makes SQS refuse the message.
SQS_INVALID_CHARACTERS = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
