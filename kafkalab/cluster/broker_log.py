"""The broker's log lines, kept in a list instead of printed: what a notebook shows of a cluster's warnings.

Theory of operation
-------------------
An embedded :class:`~kafkalab.cluster.Cluster` runs its brokers in the notebook's own process, so their log
records go to Python's ``logging``, and a warning (a killed peer, a connection closed on bad input) would land
on the page as stderr, which differs from run to run and which nbval compares. :class:`BrokerLog` is a
``logging.Handler`` that keeps those records instead (warnings and above of the ``kafkalab`` logger, or any
other logger named, e.g. ``"asyncio"`` for the cluster's event loop or ``"kafka"`` for kafka-python), and shows
them when asked, with connection ids (which contain ports) replaced by ``<connection>``. The authorizer's
decisions go to ``kafkalab.authorizer.logger`` (Kafka's ``kafka.authorizer.logger``), denials at INFO:
``BrokerLog("kafkalab.authorizer.logger", level=logging.INFO)`` keeps them.

This is the notebook's ``server.log``: Kafka's brokers write the same kind of lines through log4j
(``config/log4j.properties``), and an operator reads them after the fact.
"""
from __future__ import annotations

import logging
import re

__all__ = ["BrokerLog"]

_CONN_ID = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}:\d+-\d{1,3}(?:\.\d{1,3}){3}:\d+-\d+")


class BrokerLog(logging.Handler):
    """Keeps the broker's log records (warnings and above) instead of letting them reach stderr.

    ``install()`` attaches it to the ``kafkalab`` logger; ``messages()`` returns the texts with connection ids
    (which contain ports) replaced by ``<connection>``; ``clear()`` forgets them.
    """

    def __init__(self, logger: str = "kafkalab", level: int = logging.WARNING):
        super().__init__(level)
        self.logger_name = logger
        self.records: list[logging.LogRecord] = []

    def install(self) -> "BrokerLog":
        """Attach to the logger (replacing an earlier BrokerLog); a level below the logger's lowers it, so that
        ``BrokerLog("kafkalab.authorizer.logger", level=logging.INFO)`` keeps the authorizer's denials."""
        logger = logging.getLogger(self.logger_name)
        for h in [h for h in logger.handlers if isinstance(h, BrokerLog)]:
            logger.removeHandler(h)
        logger.addHandler(self)
        if logger.getEffectiveLevel() > self.level:
            logger.setLevel(self.level)
        return self

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self) -> list[str]:
        return [_CONN_ID.sub("<connection>", r.getMessage()) for r in list(self.records)]

    def clear(self) -> None:
        self.records.clear()

