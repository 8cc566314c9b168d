"""What the re-drive Lambda and the operator's tool share: the SQS and DynamoDB adapters, the state
table's records, the breaker, a DLQ message's identity, and the transfer that sends a message and
deletes it only once it arrived."""
