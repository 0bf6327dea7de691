"""``kafkalab console-producer``: kafka-console-producer.sh's (3.9) flags, LineMessageReader properties, messages
and exit codes; what it sends is read back with kafkalab's consumer."""
from __future__ import annotations

import io

import pytest

from kafkalab import Cluster
from kafkalab.cli import build_parser
from kafkalab.clients import Consumer, TopicPartition
from kafkalab.tools.console_producer import LineMessageReader, ReaderError, producer_props, run


@pytest.fixture(scope="module")
def cluster():
    with Cluster(brokers=1) as c:
        yield c


def parse(*args):
    return build_parser().parse_args(["console-producer", *args])


def produce(cluster, text, *args):
    err = io.StringIO()
    rc = run(parse("--bootstrap-server", cluster.bootstrap_servers, *args), stdin=io.StringIO(text), err=err)
    return rc, err.getvalue()


def read_back(cluster, topic, n):
    with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": None}) as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning([tp])
        records = []
        while len(records) < n:
            records += c.poll(5)
        return [(r.key, r.value, list(r.headers)) for r in records]


def test_lines_become_records(cluster):
    assert produce(cluster, "one\ntwo\n\nlast-without-newline", "--topic", "lines") == (0, "")
    assert read_back(cluster, "lines", 4) == [(None, b"one", []), (None, b"two", []), (None, b"", []),
                                              (None, b"last-without-newline", [])]


def test_keys_headers_and_null_marker_sync(cluster):
    text = "h1:a,h2:NULL\tk1\tv1\nNULL\tNULL\tNULL\n"
    assert produce(cluster, text, "--topic", "keyed", "--sync", "--property", "parse.key=true",
                   "--property", "parse.headers=true", "--property", "null.marker=NULL") == (0, "")
    assert read_back(cluster, "keyed", 2) == [(b"k1", b"v1", [("h1", b"a"), ("h2", None)]), (None, None, [])]


def test_unparsable_line_stops_with_exit_1(cluster):
    rc, err = produce(cluster, "k\tv\nno-separator\nnever\n", "--topic", "bad-lines", "--property", "parse.key=true")
    assert rc == 1
    assert err == ("org.apache.kafka.common.KafkaException: No key separator found on line number 2: "
                   "'no-separator'\n")
    assert read_back(cluster, "bad-lines", 1) == [(b"k", b"v", [])]     # the line before was sent


def test_reader_golden_messages():
    r = LineMessageReader({"parse.key": "true", "ignore.error": "true"})
    assert r.parse("no-separator") == (None, b"no-separator", [])
    r = LineMessageReader({"parse.headers": "true"})
    with pytest.raises(ReaderError, match="^No header key separator found in pair 'x' on line number 1$"):
        r.parse("x\tv")
    with pytest.raises(ReaderError, match="^headers.delimiter and headers.separator may not be equal$"):
        LineMessageReader({"headers.separator": "\t"})
    with pytest.raises(ReaderError, match="^null.marker and key.separator may not be equal$"):
        LineMessageReader({"null.marker": "\t", "headers.delimiter": "|"})
    with pytest.raises(ReaderError, match="^Header keys should not be equal to the null marker 'N' as they can't "
                                          "be null$"):
        LineMessageReader({"parse.headers": "true", "null.marker": "N"}).parse("N:v\tvalue")


def test_producer_props_defaults_and_precedence(tmp_path):
    props = producer_props(parse("--bootstrap-server", "h:1", "--topic", "t"))
    assert props == {"bootstrap.servers": "h:1", "compression.type": "none", "client.id": "console-producer",
                     "linger.ms": "1000", "acks": "-1", "request.timeout.ms": "1500", "retries": "3",
                     "retry.backoff.ms": "100", "send.buffer.bytes": "102400", "buffer.memory": "33554432",
                     "batch.size": "16384", "metadata.max.age.ms": "300000", "max.block.ms": "60000"}
    config = tmp_path / "p.properties"
    config.write_text("linger.ms=5\nacks=1\nclient.id=mine\n")
    props = producer_props(parse("--bootstrap-server", "h:1", "--topic", "t", "--producer.config", str(config),
                                 "--producer-property", "acks=0", "--request-required-acks", "all",
                                 "--compression-codec"))
    assert (props["linger.ms"], props["acks"], props["client.id"], props["compression.type"]) == \
        ("5", "all", "mine", "gzip")


@pytest.mark.parametrize("args,message", [
    (["--bootstrap-server", "h:1"], 'Missing required argument "[topic]"'),
    (["--topic", "t"], "Missing required option(s) [bootstrap-server]"),
    (["--topic", "t", "--bootstrap-server", "nohost"], "Please provide valid host:port like host1:9091,host2:9092\n "),
    (["--topic", "t", "--bootstrap-server", "h:1", "--line-reader", "com.example.Reader"], "com.example.Reader"),
])
def test_usage_errors_exit_1(args, message):
    err = io.StringIO()
    assert run(parse(*args), stdin=io.StringIO(""), err=err) == 1
    assert err.getvalue() == message + "\n"
