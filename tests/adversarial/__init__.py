"""End-to-end tests of hostile input: each class of it, the real re-driver on moto, and where every
message of the batch ended."""
