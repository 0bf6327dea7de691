"""ElectionType: the one-byte field of an ElectLeaders request (API 43) that says which election to run.

Theory of operation
-------------------
An ElectLeaders request asks the controller to choose leaders again, and from v1 it says how:

* ``PREFERRED`` (0) -- move leadership back to the *preferred replica*, the first one in the partition's
  assignment, if it is alive and in sync. Leadership drifts away from it whenever a broker restarts; this puts it
  back, so leaders are spread over the brokers as the assignment intended. v0 requests have no field and always
  mean PREFERRED.
* ``UNCLEAN`` (1) -- for a partition *without* a live leader only: elect an in-sync replica if one is alive, else
  any live replica, even one that is missing committed records (they are lost). This is what an operator asks for
  when waiting for the in-sync replicas to come back is worse than losing data; it works even where the topic's
  ``unclean.leader.election.enable`` is false.

A value outside the enum is refused by the broker the way Kafka's ``ElectionType.valueOf`` refuses it: an
``IllegalArgumentException`` that the request pipeline answers as UNKNOWN_SERVER_ERROR.

Mirrors ``clients/src/main/java/org/apache/kafka/common/ElectionType.java``.
"""
from __future__ import annotations

import enum

__all__ = ["ElectionType"]


class ElectionType(enum.IntEnum):
    """Kafka's ``ElectionType``: ``PREFERRED`` (0) or ``UNCLEAN`` (1)."""

    PREFERRED = 0
    UNCLEAN = 1

    @classmethod
    def of(cls, value: int) -> "ElectionType":
        """``ElectionType.valueOf(byte)``: ValueError with Kafka's message for anything else."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"Value {value} must be one of [{', '.join(e.name for e in cls)}]") from None

    @classmethod
    def parse(cls, text: str) -> "ElectionType":
        """The tool's ``--election-type``: the name in any case (``preferred``, ``UNCLEAN``)."""
        for e in cls:
            if e.name.lower() == text.strip().lower():
                return e
        raise ValueError(text)
