"""BrokerLog: the brokers' warnings kept in a list (not on stderr), connection ids blanked."""
import logging

from kafkalab.cluster import BrokerLog


def test_keeps_warnings_masks_connection_ids_and_replaces_an_earlier_handler():
    first = BrokerLog("kafkalab.test-broker-log").install()
    log = BrokerLog("kafkalab.test-broker-log").install()        # a re-run cell: one handler, not two
    logger = logging.getLogger("kafkalab.test-broker-log")
    try:
        assert first not in logger.handlers and log in logger.handlers
        logger.info("not kept: below WARNING")
        logger.warning("closing %s: request too large", "127.0.0.1:9092-127.0.0.1:51234-7")
        assert log.messages() == ["closing <connection>: request too large"]
        log.clear()
        assert log.messages() == []
    finally:
        logger.removeHandler(log)


def test_a_lower_level_reaches_the_logger():
    logger = logging.getLogger("kafkalab.test-broker-log-info")
    log = BrokerLog("kafkalab.test-broker-log-info", level=logging.INFO).install()
    try:
        logger.info("Principal = User:ANONYMOUS is Denied ...")
        assert log.messages() == ["Principal = User:ANONYMOUS is Denied ..."]
    finally:
        logger.removeHandler(log)
        logger.setLevel(logging.NOTSET)
