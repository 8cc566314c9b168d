"""Item <-> model codecs of the state table's records, one module per record format.

Every item read from the table is parsed here once, into validated model values; what fails
validation raises ``CorruptRecord`` naming its key, field and problem, never another exception.
"""
