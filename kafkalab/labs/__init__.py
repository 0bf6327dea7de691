"""kafkalab.labs -- the lab kit: what the notebooks in ``labs/`` need beyond the library, one module per lab.

Theory of operation
-------------------
A lab notebook teaches with the library itself (``kafkalab.protocol``, ``kafkalab.cluster``, the clients, the
pictures in ``kafkalab.viz``, the captures in ``kafkalab.trace``). What is left over belongs to one lab only:
its fixed settings (client ids, topics, records with fixed timestamps, so that the stored outputs compare
equal under nbval), small helpers that shape what the lab shows into tables, and its exercises' checks. Each
lab has one module here, ``kafkalab.labs.labNN`` (``from kafkalab.labs import lab10``).

Anything several labs use lives in the library's room for it, not here: pictures in :mod:`kafkalab.viz`
(:class:`~kafkalab.viz.SequenceDiagram`, :class:`~kafkalab.viz.RangeChart`, ...), the bare connection to a
broker in :mod:`kafkalab.trace` (:class:`~kafkalab.trace.RawConnection`), the handler that keeps the brokers'
log lines off the page in :mod:`kafkalab.cluster` (:class:`~kafkalab.cluster.BrokerLog`). A lab module never
imports another lab's module.

The layering: nothing in the library imports the lab kit; the lab kit may import anything in the library.

The exercises' checks share :mod:`kafkalab.labs.checks` (re-exported here): :class:`CheckResult` (✓, ✗ or …
with a hint), :func:`check_equal`, :func:`check_parts` and :data:`NOT_ANSWERED`, the ``...`` of a student's
answer cell.
"""
from kafkalab.labs.checks import (NOT_ANSWERED, CheckResult, EvidenceFailed, Part, check, check_equal, check_parts,
                                  evidence, is_unanswered)

__all__ = ["NOT_ANSWERED", "CheckResult", "EvidenceFailed", "Part", "check", "check_equal", "check_parts", "evidence",
           "is_unanswered"]
