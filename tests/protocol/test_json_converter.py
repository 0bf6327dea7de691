"""The spec-driven JSON writer: Kafka's generated JsonConverter rules and Jackson's compact printing."""
import uuid

import pytest

from kafkalab.protocol import codec
from kafkalab.protocol.json_converter import Binary, java_double, to_json, uuid_to_string, write
from kafkalab.protocol.messages import coordinator_records as records
from kafkalab.protocol.messages.data import CONSUMER_PROTOCOL_SUBSCRIPTION
from kafkalab.protocol.schema import Field as F, Message


def test_fields_in_spec_order_with_camel_case_names_and_only_those_of_the_version():
    value = records.OFFSET_COMMIT_VALUE.body_class(offset=5, leader_epoch=2, metadata="m", commit_timestamp=7,
                                                   expire_timestamp=9)
    assert to_json(write(records.OFFSET_COMMIT_VALUE, value, 3)) == \
        '{"offset":5,"leaderEpoch":2,"metadata":"m","commitTimestamp":7}'
    assert to_json(write(records.OFFSET_COMMIT_VALUE, value, 1)) == \
        '{"offset":5,"metadata":"m","commitTimestamp":7,"expireTimestamp":9}'
    key = records.TRANSACTION_LOG_KEY.body_class(transactional_id="tx")
    assert to_json(write(records.TRANSACTION_LOG_KEY, key, 0)) == '{"transactionalId":"tx"}'   # first letter lowered


def test_tagged_fields_only_when_not_at_their_default_and_nullable_arrays_as_null():
    cls = records.TRANSACTION_LOG_VALUE.body_class
    body = cls(producer_id=1, previous_producer_id=-1, next_producer_id=4, producer_epoch=0, transaction_timeout_ms=10,
               transaction_status=0, transaction_partitions=None, transaction_last_update_timestamp_ms=3,
               transaction_start_timestamp_ms=-1, client_transaction_version=0)
    assert to_json(write(records.TRANSACTION_LOG_VALUE, body, 1)) == (
        '{"producerId":1,"nextProducerId":4,"producerEpoch":0,"transactionTimeoutMs":10,"transactionStatus":0,'
        '"transactionPartitions":null,"transactionLastUpdateTimestampMs":3,"transactionStartTimestampMs":-1}')
    partitions = (cls.PartitionsSchema(topic="t", partition_ids=(0, 1)),)
    assert to_json(write(records.TRANSACTION_LOG_VALUE, body._replace(transaction_partitions=partitions), 0)) == (
        '{"producerId":1,"producerEpoch":0,"transactionTimeoutMs":10,"transactionStatus":0,'
        '"transactionPartitions":[{"topic":"t","partitionIds":[0,1]}],"transactionLastUpdateTimestampMs":3,'
        '"transactionStartTimestampMs":-1}')


def test_bytes_as_base64_and_null_bytes_as_null():
    data = codec.encode(CONSUMER_PROTOCOL_SUBSCRIPTION, 0,
                        CONSUMER_PROTOCOL_SUBSCRIPTION.body_class(topics=("a",), user_data=b"\xfb\xff\x01"))
    body, _ = codec.decode(CONSUMER_PROTOCOL_SUBSCRIPTION, 0, data)
    assert to_json(write(CONSUMER_PROTOCOL_SUBSCRIPTION, body, 0)) == '{"topics":["a"],"userData":"+/8B"}'
    assert to_json(write(CONSUMER_PROTOCOL_SUBSCRIPTION, body._replace(user_data=None), 0)) == \
        '{"topics":["a"],"userData":null}'


def test_uuid_and_float_fields_as_kafka_prints_them():
    message = Message("Probe", kind="data", valid="0", fields=(F("Id", "uuid", "0+"), F("Ratio", "float64", "0+")))
    body = message.body_class(id=uuid.UUID(bytes=bytes(range(16))), ratio=1e7)
    assert to_json(write(message, body, 0)) == '{"id":"AAECAwQFBgcICQoLDA0ODw","ratio":1.0E7}'
    assert uuid_to_string(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_a_version_the_message_does_not_have_is_refused():
    with pytest.raises(ValueError, match="Can't write version 5 of OffsetCommitKey"):
        write(records.OFFSET_COMMIT_KEY, records.OFFSET_COMMIT_KEY.body_class(), 5)


def test_printing_matches_jackson_object_node_to_string():
    # The expected text is what Jackson 2.21's ObjectNode.toString() printed for the same nodes (TextNode,
    # BinaryNode, DoubleNode, ShortNode, NullNode), run once with the jars beside pyspark.
    tree = {"s": 'q"b\\s/\b\t\n\f\r\x01\x1f\x7f é €  \u2028', "b": Binary(b"\xfb\xff\x01\x02"), "e": Binary(b""),
            "d": 1e7, "d2": 0.5, "d3": float("nan"), "sh": -3, "nul": None, "list": [True, False]}
    assert to_json(tree) == ('{"s":"q\\"b\\\\s/\\b\\t\\n\\f\\r\\u0001\\u001F\x7f é €  \u2028","b":"+/8BAg==","e":"",'
                             '"d":1.0E7,"d2":0.5,"d3":"NaN","sh":-3,"nul":null,"list":[true,false]}')


@pytest.mark.parametrize("value, text", [(1.0, "1.0"), (0.001, "0.001"), (1e7, "1.0E7"), (1.5e-4, "1.5E-4"),
                                         (-2.5e20, "-2.5E20"), (123456789.0, "1.23456789E8"), (0.0, "0.0"),
                                         (float("inf"), "Infinity")])
def test_java_double_to_string(value, text):
    assert java_double(value) == text
