"""What an append reports back: the offsets it assigned (or found), timestamps, sizes, and whether it was a retry.

Theory of operation
-------------------
After an append the broker needs a handful of facts for the Produce response and for replication:
``base_offset`` (here ``first_offset``) and ``log_append_time`` go back to the producer, ``last_offset``
tells the partition how far the high watermark must move before an ``acks=all`` request completes, and
``log_start_offset`` rides along in the response. A retry that the idempotent-producer state recognises is
answered with the *original* offsets and ``duplicate=True``: nothing new was written.

``origin`` says who is appending, which decides how much is validated (Kafka's ``AppendOrigin``):

* ``client`` -- a producer: full validation, offsets assigned, duplicates detected, sequences checked;
* ``coordinator`` -- the group/transaction coordinator writing its own records: offsets assigned, no
  sequence checks;
* ``replication`` -- a follower copying the leader: offsets and epochs kept as they are.

Mirrors: ``storage/src/main/java/org/apache/kafka/storage/internals/log/LogAppendInfo.java`` and
``AppendOrigin.java``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["AppendOrigin", "LogAppendInfo"]


class AppendOrigin(str, enum.Enum):
    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"

    @classmethod
    def of(cls, value) -> "AppendOrigin":
        return value if isinstance(value, cls) else cls(str(value).lower())


@dataclass
class LogAppendInfo:
    first_offset: int = -1
    last_offset: int = -1
    last_leader_epoch: int = -1
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    log_append_time: int = -1
    log_start_offset: int = 0
    num_messages: int = 0
    valid_bytes: int = 0
    source_compression: int = 0
    target_compression: int = 0
    last_offset_of_first_batch: int = -1
    duplicate: bool = False
    record_errors: list = field(default_factory=list)
    record_validation_stats: object = None    # RecordValidationStats when a v0/v1 set was converted

    @property
    def base_offset(self) -> int:
        """The Produce response's ``base_offset``."""
        return self.first_offset

    @property
    def first_or_last_offset_of_first_batch(self) -> int:
        return self.first_offset if self.first_offset >= 0 else self.last_offset_of_first_batch
