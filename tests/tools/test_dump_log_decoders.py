"""``kafkalab dump-log --offsets-decoder / --transaction-log-decoder``: Kafka 3.9's DumpLogSegments output, on
segments a real in-process broker wrote (a group, its commits, a transaction with offsets) and on hand-built
records for the edge cases (tombstones, unknown types and versions, bytes that do not decode)."""
from __future__ import annotations

import io
import re
import struct
import time

import pytest

from kafkalab import Cluster
from kafkalab.cli import build_parser
from kafkalab.clients import Admin, Consumer, Producer
from kafkalab.clients.consumer import ConsumerGroupMetadata
from kafkalab.coordinator.transaction.state import TransactionState
from kafkalab.protocol.consumer_protocol import Subscription, encode_subscription
from kafkalab.records import SimpleRecord, build_batch
from kafkalab.tools.dump_log import main
from kafkalab.tools.record_decoders import TRANSACTION_STATE_NAMES, scala_hash_set_order

T0 = 1_700_000_000_000
OVERRIDES = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000,
             "offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1,
             "transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1}


def dump(*argv) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    assert main(list(argv), out, err) == 0
    return out.getvalue(), err.getvalue()


def record_tails(out: str) -> list[str]:
    """What follows each record's metadata (``| offset: ... headerKeys: [] ``): the decoded part."""
    return [line.split("headerKeys: [] ", 1)[1] if "headerKeys: [] " in line else ""
            for line in out.splitlines() if line.startswith("| ")]


def pattern(template: str) -> str:
    """An exact line with placeholders: {TS} any timestamp, {MEMBER} the member id, {PID} the producer id."""
    text = re.escape(template)
    for name, regex in (("TS", r"\d+"), ("MEMBER", r"(?P<member>reader-[0-9a-f-]{36})"), ("PID", r"(?P<pid>\d+)")):
        first = regex
        text = text.replace(re.escape("{" + name + "}"), first, 1)
        back = r"\d+" if name == "TS" else f"(?P={name.lower()})"
        text = text.replace(re.escape("{" + name + "}"), back)
    return text


def assert_lines(actual: list[str], templates: list[str]) -> None:
    assert len(actual) == len(templates), "\n".join(actual)
    for line, template in zip(actual, templates):
        assert re.fullmatch(pattern(template), line), f"\n{line}\n  does not match\n{template}"


# ---------------------------------------------------------------------------------------------- a real broker
@pytest.fixture(scope="module")
def internal_segments():
    """A group that joined, committed and left, then a transaction that wrote a record and the group's offset;
    returns the first segments of ``__consumer_offsets-0`` and ``__transaction_state-0``."""
    with Cluster(brokers=1, overrides=OVERRIDES) as cluster:
        bootstrap = cluster.bootstrap_servers
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([("source", 1, 1), ("sink", 1, 1)])
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            for i in range(3):
                producer.send("source", f"in-{i}".encode(), partition=0)
        with Consumer({"bootstrap.servers": bootstrap, "group.id": "readers", "client.id": "reader",
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"}) as consumer:
            consumer.subscribe(["source"])
            seen, deadline = [], time.monotonic() + 30
            while len(seen) < 3:
                assert time.monotonic() < deadline, "the consumer never got its records"
                seen += consumer.poll(0.2)
            consumer.commit({("source", 0): 2})
        with Producer({"bootstrap.servers": bootstrap, "transactional.id": "copier", "linger.ms": 0}) as copier:
            copier.init_transactions()
            copier.begin_transaction()
            copier.send("sink", b"out-2", partition=0)
            copier.send_offsets_to_transaction({("source", 0): 3}, ConsumerGroupMetadata("readers"))
            copier.commit_transaction()
        data = cluster.base_dir / "broker-0"
        offsets = data / "__consumer_offsets-0" / "00000000000000000000.log"
        transactions = data / "__transaction_state-0" / "00000000000000000000.log"
        deadline = time.monotonic() + 20                 # the CompleteCommit record follows the markers
        while "CompleteCommit" not in dump("--files", str(transactions), "--transaction-log-decoder")[0]:
            assert time.monotonic() < deadline, "the transaction never completed"
            time.sleep(0.1)
        yield offsets, transactions


def test_offsets_decoder_on_a_broker_written_consumer_offsets_segment(internal_segments):
    out, err = dump("--files", str(internal_segments[0]), "--offsets-decoder")
    assert err == ""
    assert_lines(record_tails(out), [
        'key: {"type":"2","data":{"group":"readers"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        '"generation":1,"protocol":"range","leader":"{MEMBER}","currentStateTimestamp":{TS},"members":[{"memberId":'
        '"{MEMBER}","groupInstanceId":null,"clientId":"reader","clientHost":"/127.0.0.1","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["source"],"userData":null,"ownedPartitions":[],'
        '"generationId":-1,"rackId":null},"assignment":{"assignedPartitions":[{"topic":"source","partitions":[0]}],'
        '"userData":null}}]}}',
        'key: {"type":"1","data":{"group":"readers","topic":"source","partition":0}} payload: {"version":"3","data":'
        '{"offset":2,"leaderEpoch":-1,"metadata":"","commitTimestamp":{TS}}}',
        'key: {"type":"2","data":{"group":"readers"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        '"generation":2,"protocol":null,"leader":null,"currentStateTimestamp":{TS},"members":[]}}',
        'key: {"type":"1","data":{"group":"readers","topic":"source","partition":0}} payload: {"version":"3","data":'
        '{"offset":3,"leaderEpoch":-1,"metadata":"","commitTimestamp":{TS}}}',
        "endTxnMarker: COMMIT coordinatorEpoch: 0",
    ])
    assert "isTransactional: true isControl: false" in out       # the transactional offset commit's batch


def test_transaction_log_decoder_on_a_broker_written_transaction_state_segment(internal_segments):
    out, err = dump("--files", str(internal_segments[1]), "--transaction-log-decoder")
    assert err == ""
    key = "key: transaction_metadata::transactionalId=copier payload: producerId:{PID},producerEpoch:0,"
    assert_lines(record_tails(out), [
        key + "state=Empty,partitions=[],txnLastUpdateTimestamp={TS},txnTimeoutMs=60000",
        key + "state=Ongoing,partitions=[sink-0],txnLastUpdateTimestamp={TS},txnTimeoutMs=60000",
        key + "state=Ongoing,partitions=[__consumer_offsets-0,sink-0],txnLastUpdateTimestamp={TS},txnTimeoutMs=60000",
        key + "state=PrepareCommit,partitions=[__consumer_offsets-0,sink-0],txnLastUpdateTimestamp={TS},"
              "txnTimeoutMs=60000",
        key + "state=CompleteCommit,partitions=[],txnLastUpdateTimestamp={TS},txnTimeoutMs=60000",
    ])


def test_without_a_decoder_the_same_records_are_printed_as_text(internal_segments):
    out, _ = dump("--files", str(internal_segments[1]), "--print-data-log")
    assert "transaction_metadata::" not in out and "key: \x00\x00\x00\x06copier" in out


# ---------------------------------------------------------------------------------------------- hand-built records
def int16(n):
    return struct.pack(">h", n)


def string(s):
    return int16(len(s)) + s.encode()


def offset_key(group="g", topic="t", partition=0, version=1):
    return int16(version) + string(group) + string(topic) + struct.pack(">i", partition)


def write_segment(tmp_path, pairs) -> str:
    """One batch holding a record per (key, value), at offsets 0, 1, 2 ..."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([SimpleRecord(k, v, (), T0) for k, v in pairs]))
    return str(path)


def test_offsets_decoder_tombstones_versions_and_errors(tmp_path):
    flexible_value = int16(5) + struct.pack(">qi", 7, 1) + b"\x02m" + struct.pack(">q", T0) + b"\x00"
    path = write_segment(tmp_path, [
        (offset_key(), None),                                                      # a tombstone
        (offset_key(version=0), int16(1) + struct.pack(">q", 4) + string("md") + struct.pack(">qq", T0, T0 + 9)),
        (offset_key(), flexible_value),                 # v5: Kafka reads and prints it as the highest version (4)
        (int16(9) + string("g"), int16(0)),                                         # unknown record type
        (b"\x00", None),                                                            # no room for the type
        (offset_key()[:5], None),                                                   # truncated key
        (offset_key(), int16(3) + struct.pack(">q", 1)),                            # truncated value
        (offset_key(), b"\x00"),                                                    # no room for the version
        (int16(4) + string("g"), None),                                             # KIP-848: no schema here
        (None, b"x"),                                                               # no key at all
        (offset_key(), int16(3) + struct.pack(">qi", 8, -1) + string('q"\n') + struct.pack(">q", T0)),
    ])
    out, err = dump("--files", path, "--offsets-decoder")
    truncated_value = ("needs 4 bytes for INT32 but only 0 remain (field leader_epoch, byte 10)")
    assert record_tails(out) == [
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: <DELETE>',
        'key: {"type":"0","data":{"group":"g","topic":"t","partition":0}} payload: {"version":"1","data":{"offset":4,'
        '"metadata":"md","commitTimestamp":1700000000000,"expireTimestamp":1700000000009}}',
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: {"version":"5","data":{"offset":7,'
        '"leaderEpoch":1,"metadata":"m","commitTimestamp":1700000000000}}',
        "key: Unknown record type 9 at offset 3, skipping.",
        "key: Error at offset 4, skipping. Could not read version from key's buffer.",
        "key: Error at offset 5, skipping. Could not read record with version 1 from key's buffer due to: needs 2 "
        "bytes for an INT16 length but only 0 remain (field topic, byte 5).",
        f"key: Error at offset 6, skipping. Could not read record with version 3 from value's buffer due to: "
        f"{truncated_value}.",
        "key: Error at offset 7, skipping. Could not read version from value's buffer.",
        "key: Error at offset 8, skipping. kafkalab has no schema for record type 4 "
        "(ConsumerGroupPartitionMetadataKey, a KIP-848 consumer group record).",
        "",                                                      # metadata only: Kafka's tool stops here
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: {"version":"3","data":{"offset":8,'
        '"leaderEpoch":-1,"metadata":"q\\"\\n","commitTimestamp":1700000000000}}',
    ]
    assert err == ("Could not decode the record at offset 9: Failed to decode message at offset 9 using offset topic "
                   "decoder (message had a missing key)\n")


def group_value(protocol_type: str, subscription: bytes, assignment: bytes) -> bytes:
    member = (string("m-1") + int16(-1) + string("c") + string("/h") + struct.pack(">ii", 10, 20) +
              struct.pack(">i", len(subscription)) + subscription + struct.pack(">i", len(assignment)) + assignment)
    return (int16(3) + string(protocol_type) + struct.pack(">i", 1) + string("range") + string("m-1") +
            struct.pack(">q", T0) + struct.pack(">i", 1) + member)


def test_consumer_protocol_bytes_are_decoded_only_for_consumer_groups_and_only_when_they_decode(tmp_path):
    subscription = encode_subscription(Subscription(["t"], b"\x01"), 1)
    path = write_segment(tmp_path, [
        (int16(2) + string("g"), group_value("consumer", subscription, b"\x00")),
        (int16(2) + string("g"), group_value("connect", subscription, b"")),
    ])
    out, _ = dump("--files", path, "--offsets-decoder")
    head = ('key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"protocolType":"%s",'
            '"generation":1,"protocol":"range","leader":"m-1","currentStateTimestamp":1700000000000,"members":[{'
            '"memberId":"m-1","groupInstanceId":null,"clientId":"c","clientHost":"/h","rebalanceTimeout":10,'
            '"sessionTimeout":20,')
    assert record_tails(out) == [
        head % "consumer" + '"subscription":{"topics":["t"],"userData":"AQ==","ownedPartitions":[]},'
                            '"assignment":"AA=="}]}}',                 # one byte: no version, kept as base64
        head % "connect" + '"subscription":"AAEAAAABAAF0AAAAAQEAAAAA","assignment":""}]}}',
    ]


def txn_value(version=0, status=1, partitions=(("t", (0, 1, 2, 3)),), tail=b""):
    body = int16(version) + struct.pack(">qhib", 1000, 2, 60000, status)
    body += struct.pack(">i", len(partitions))
    for topic, ids in partitions:
        body += string(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", p) for p in ids)
    return body + struct.pack(">qq", T0 + 1, T0) + tail


def test_transaction_log_decoder_states_partitions_tombstones_and_errors(tmp_path):
    flexible = (int16(1) + struct.pack(">qhib", 1000, 3, 60000, 4) + b"\x01" + struct.pack(">qq", T0 + 2, T0) +
                b"\x01" + b"\x00\x08" + struct.pack(">q", 999))            # empty array; tagged PreviousProducerId
    path = write_segment(tmp_path, [
        (int16(0) + string("tx"), txn_value()),
        (int16(0) + string("tx"), flexible),
        (int16(0) + string("tx"), None),
        (int16(1) + string("tx"), txn_value()),
        (int16(0) + string("tx"), txn_value(version=2)),
        (int16(0) + string("tx"), txn_value(status=9)),
        (int16(0) + string("tx"), txn_value(status=0, partitions=(("t", (5,)),))),   # Empty: partitions ignored
    ])
    out, err = dump("--files", path, "--transaction-log-decoder")
    key = "key: transaction_metadata::transactionalId=tx payload: "
    assert record_tails(out) == [
        key + "producerId:1000,producerEpoch:2,state=Ongoing,partitions=[t-3,t-2,t-1,t-0],"
              "txnLastUpdateTimestamp=1700000000001,txnTimeoutMs=60000",
        key + "producerId:1000,producerEpoch:3,state=CompleteCommit,partitions=[],"
              "txnLastUpdateTimestamp=1700000000002,txnTimeoutMs=60000",
        "key: transaction_metadata::transactionalId=tx payload: <DELETE>",
        "key: unknown::version=1",
        "", "",
        key + "producerId:1000,producerEpoch:2,state=Empty,partitions=[],"
              "txnLastUpdateTimestamp=1700000000001,txnTimeoutMs=60000",
    ]
    assert err.splitlines() == [
        "Could not decode the record at offset 4: Unknown version 2 from the transaction log message value",
        "Could not decode the record at offset 5: Unknown transaction state id 9 from the transaction status message",
    ]


# Outputs of Scala 2.13.18's mutable.HashSet (the scala-library jar beside pyspark), filled as
# TransactionMetadata.addPartitions fills it: one ++= per topic of the value, with TopicPartition's hashCode.
@pytest.mark.parametrize("groups, scala", [
    ("sink:0;__consumer_offsets:0", "__consumer_offsets-0,sink-0"),
    ("t:0,1,2,3", "t-3,t-2,t-1,t-0"),
    ("t:0,1,2,3,4,5,6,7,8,9,10,11,12;u:5,6", "t-12,t-11,t-10,t-9,t-8,t-7,t-6,t-5,u-6,t-4,u-5,t-3,t-2,t-1,t-0"),
    ("orders:0,1;payments:3;__consumer_offsets:12,40",
     "payments-3,__consumer_offsets-12,orders-0,__consumer_offsets-40,orders-1"),
    ("a:1;b:2;c:3;d:4;e:5;f:6;g:7;h:8;i:9;j:10;k:11;l:12;m:13", "a-1,b-2,c-3,d-4,e-5,f-6,g-7,h-8,i-9,j-10,k-11,l-12,m-13"),
])
def test_partitions_in_scala_hash_set_order(groups, scala):
    parsed = [[(topic, int(p)) for p in ids.split(",")] for topic, ids in (g.split(":") for g in groups.split(";"))]
    assert ",".join(f"{t}-{p}" for t, p in scala_hash_set_order(parsed)) == scala


def test_state_names_are_the_coordinators():
    assert TRANSACTION_STATE_NAMES == {state.id: state.value for state in TransactionState}


def test_help_shows_the_decoders_with_kafkas_texts(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dump-log", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--offsets-decoder If set, log data will be parsed as offset data from the __consumer_offsets topic." in text
    assert ("--transaction-log-decoder If set, log data will be parsed as transaction metadata from the "
            "__transaction_state topic.") in text
    assert ("--print-data-log If set, printing the messages content when dumping data logs. Automatically set if any "
            "decoder option is specified.") in text
