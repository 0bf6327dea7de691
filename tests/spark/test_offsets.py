"""kafkalab.spark.offsets: the Spark source's option checks and offset arithmetic, without Spark or a broker."""
import json
import logging

import pytest

from kafkalab.spark.offsets import (DataLossError, SourceOptionError, Subscription, clamp_to_log, flatten,
                                    normalize, parse_options, parse_sink_options, plan_ranges, rate_limit,
                                    resolve_offsets, to_json, split_ranges)

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def opts(streaming=True, **kw):
    return parse_options({**BOOT, **kw}, streaming=streaming)


def test_the_package_imports_without_pyspark_being_touched():
    import subprocess
    import sys
    code = ("import sys; import kafkalab.spark, kafkalab.spark.offsets; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- offsets JSON ---------------------------------------------------------------------------------------------
def test_normalize_orders_topics_and_partitions_with_str_keys():
    got = normalize({"b": {10: 1, 2: 3}, "a": {"1": 5, "0": 4}})
    assert got == {"a": {"0": 4, "1": 5}, "b": {"2": 3, "10": 1}}
    assert list(got) == ["a", "b"] and list(got["b"]) == ["2", "10"]
    assert json.dumps(got) == json.dumps(normalize(json.loads(json.dumps(got))))   # round trip is stable
    assert to_json(got) == '{"a":{"0":4,"1":5},"b":{"2":3,"10":1}}'


def test_flatten_nest():
    assert flatten({"t": {"0": 5, "1": 6}}) == {("t", 0): 5, ("t", 1): 6}


# -- option validation ----------------------------------------------------------------------------------------
def test_defaults_streaming_and_batch():
    s = opts(subscribe="b,a, a")
    assert s.subscription == Subscription("subscribe", topics=("a", "b"))
    assert (s.starting, s.ending, s.max_offsets_per_trigger) == ("latest", None, None)
    assert s.fail_on_data_loss is True and s.include_headers is False
    assert s.client_config == {"bootstrap.servers": "127.0.0.1:9092"}
    b = opts(streaming=False, subscribe="a")
    assert (b.starting, b.ending) == ("earliest", "latest")


def test_options_are_case_insensitive_and_kafka_options_pass_through():
    s = parse_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "kafka.fetch.max.wait.ms": "100", "SubscribePattern": "ev.*",
                       "MAXOFFSETSPERTRIGGER": "7", "failondataloss": "False", "includeHeaders": "true"},
                      streaming=True)
    assert s.client_config == {"bootstrap.servers": "h:1", "fetch.max.wait.ms": "100"}
    assert s.subscription.kind == "subscribePattern" and s.max_offsets_per_trigger == 7
    assert s.fail_on_data_loss is False and s.include_headers is True


@pytest.mark.parametrize("given", [{}, {"subscribe": "a", "assign": '{"a":[0]}'},
                                   {"subscribe": "a", "subscribePattern": "a.*"}])
def test_exactly_one_subscription(given):
    with pytest.raises(SourceOptionError, match="Exactly one of"):
        opts(**given)


def test_bootstrap_required():
    with pytest.raises(SourceOptionError, match="kafka.bootstrap.servers"):
        parse_options({"subscribe": "a"}, streaming=True)


@pytest.mark.parametrize("name, hint", [("group.id", "checkpoint"), ("auto.offset.reset", "startingOffsets"),
                                        ("enable.auto.commit", "checkpoint"), ("key.deserializer", "bytes"),
                                        ("value.deserializer", "bytes"), ("interceptor.classes", "interceptors")])
def test_consumer_settings_the_source_owns_are_refused(name, hint):
    with pytest.raises(SourceOptionError, match=rf"kafka\.{name}.*{hint}"):
        opts(subscribe="a", **{f"kafka.{name}": "x"})


def test_assign_and_pattern_parsing():
    s = opts(assign='{"b":[1,0],"a":[2]}')
    assert s.subscription.assigned == (("a", 2), ("b", 0), ("b", 1))
    assert s.subscription.select({}) == [("a", 2), ("b", 0), ("b", 1)]
    for bad in ('["a"]', '{"a":"0"}', "nope", "{}"):
        with pytest.raises(SourceOptionError, match="assign"):
            opts(assign=bad)
    with pytest.raises(SourceOptionError, match="regular expression"):
        opts(subscribePattern="ev(")


def test_pattern_matches_whole_names_and_skips_internal_topics():
    sub = opts(subscribePattern="ev.*").subscription
    assert sub.select({"events": 2, "xevents": 1, "ev": 1, "__consumer_offsets": 50}) == \
        [("ev", 0), ("events", 0), ("events", 1)]
    assert opts(subscribePattern=".*").subscription.wanted_topics(["a", "__consumer_offsets"]) == ["a"]


def test_subscribe_ignores_topics_that_do_not_exist():
    assert opts(subscribe="a,missing").subscription.select({"a": 2, "b": 1}) == [("a", 0), ("a", 1)]


def test_starting_and_ending_offsets_rules():
    s = opts(startingOffsets='{"t":{"1":-1,"0":-2}}', subscribe="t")
    assert s.starting == {"t": {"0": -2, "1": -1}}
    assert opts(startingOffsets=" Earliest ", subscribe="t").starting == "earliest"
    with pytest.raises(SourceOptionError, match='"latest" is not allowed as a starting offset for batch'):
        opts(streaming=False, subscribe="t", startingOffsets="latest")
    with pytest.raises(SourceOptionError, match="can't be -1"):
        opts(streaming=False, subscribe="t", startingOffsets='{"t":{"0":-1}}')
    with pytest.raises(SourceOptionError, match='"earliest" is not allowed as an ending'):
        opts(streaming=False, subscribe="t", endingOffsets="earliest")
    with pytest.raises(SourceOptionError, match="can't be -2"):
        opts(streaming=False, subscribe="t", endingOffsets='{"t":{"0":-2}}')
    with pytest.raises(SourceOptionError, match="not valid in streaming"):
        opts(subscribe="t", endingOffsets="latest")
    assert opts(streaming=False, subscribe="t", endingOffsets='{"t":{"0":-1}}').ending == {"t": {"0": -1}}
    for bad in ("{nope", '{"t":{"x":1}}', '{"t":{"0":-3}}', '{"t":{"0":1.5}}', '["t"]'):
        with pytest.raises(SourceOptionError, match="startingOffsets"):
            opts(subscribe="t", startingOffsets=bad)


def test_other_options():
    with pytest.raises(SourceOptionError, match="maxOffsetsPerTrigger"):
        opts(subscribe="t", maxOffsetsPerTrigger="0")
    with pytest.raises(SourceOptionError, match="failOnDataLoss"):
        opts(subscribe="t", failOnDataLoss="maybe")
    with pytest.raises(SourceOptionError, match="startingtimestamp"):
        opts(subscribe="t", startingTimestamp="1000")
    assert opts(subscribe="t", minPartitions="4").min_partitions == 4
    assert opts(subscribe="t", groupIdPrefix="x").ignored == ("groupidprefix",)
    with pytest.raises(SourceOptionError, match="minPartitions"):
        opts(subscribe="t", minPartitions="0")


def test_split_ranges_like_sparks_offset_range_calculator():
    ranges = [("t", 0, 0, 300), ("t", 1, 0, 100), ("t", 2, 50, 50)]
    assert split_ranges(ranges, None) == ranges and split_ranges(ranges, 2) == ranges
    out = split_ranges(ranges, 4)                 # 300 of 400 -> 3 pieces, 100 -> 1, the empty range dropped
    assert out == [("t", 0, 0, 100), ("t", 0, 100, 200), ("t", 0, 200, 300), ("t", 1, 0, 100)]
    odd = split_ranges([("t", 0, 10, 17)], 3)     # pieces cover the range exactly, no gaps or overlaps
    assert [r[2:] for r in odd] == [(10, 12), (12, 14), (14, 17)]


def test_sink_options():
    assert parse_sink_options({**BOOT, "topic": "out", "kafka.linger.ms": "0"}) == \
        ({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": "0"}, "out")
    with pytest.raises(SourceOptionError, match="key.serializer"):
        parse_sink_options({**BOOT, "kafka.key.serializer": "x"})


# -- resolving ------------------------------------------------------------------------------------------------
def _lookups():
    early = {("t", 0): 3, ("t", 1): 0}
    late = {("t", 0): 10, ("t", 1): 7}
    calls = []

    def earliest(tps):
        calls.append(("earliest", list(tps)))
        return {tp: early[tp] for tp in tps}

    def latest(tps):
        calls.append(("latest", list(tps)))
        return {tp: late[tp] for tp in tps}
    return earliest, latest, calls


def test_resolve_words_and_json():
    earliest, latest, calls = _lookups()
    tps = [("t", 1), ("t", 0)]
    assert resolve_offsets("startingOffsets", "earliest", tps, earliest, latest) == {"t": {"0": 3, "1": 0}}
    assert resolve_offsets("startingOffsets", "latest", tps, earliest, latest) == {"t": {"0": 10, "1": 7}}
    calls.clear()
    got = resolve_offsets("startingOffsets", {"t": {"0": -2, "1": -1}}, tps, earliest, latest)
    assert got == {"t": {"0": 3, "1": 7}}
    assert calls == [("earliest", [("t", 0)]), ("latest", [("t", 1)])]
    calls.clear()
    assert resolve_offsets("startingOffsets", {"t": {"0": 5, "1": 2}}, tps, earliest, latest) == \
        {"t": {"0": 5, "1": 2}}
    assert calls == []                                     # explicit offsets need no lookup


def test_resolve_json_must_name_every_partition():
    earliest, latest, _ = _lookups()
    with pytest.raises(SourceOptionError, match=r"every partition.*Specified: t-0; subscribed: t-0, t-1"):
        resolve_offsets("startingOffsets", {"t": {"0": 1}}, [("t", 0), ("t", 1)], earliest, latest)


# -- rate limit -----------------------------------------------------------------------------------------------
def test_rate_limit_prorates_by_backlog():
    start = {"t": {"0": 0, "1": 0, "2": 0}}
    latest = {"t": {"0": 60, "1": 30, "2": 10}}
    assert rate_limit(start, latest, 10) == {"t": {"0": 6, "1": 3, "2": 1}}


def test_rate_limit_never_starves_small_partitions_and_may_exceed_the_cap():
    start = {"t": {str(p): 0 for p in range(5)}}
    latest = {"t": {"0": 1000, "1": 1, "2": 1, "3": 1, "4": 1}}
    got = rate_limit(start, latest, 10)
    # 10 * 1000/1004 = 9.96 -> 9; 10 * 1/1004 < 1 -> ceil -> 1 each: 13 rows > 10
    assert got == {"t": {"0": 9, "1": 1, "2": 1, "3": 1, "4": 1}}


def test_rate_limit_caps_at_latest_and_keeps_idle_partitions():
    start = {"t": {"0": 5, "1": 8}}
    latest = {"t": {"0": 7, "1": 8}}
    assert rate_limit(start, latest, 100) == {"t": {"0": 7, "1": 8}}
    assert rate_limit(latest, latest, 100) == normalize(latest)              # nothing new: same offsets


def test_rate_limit_new_partitions_start_at_their_earliest():
    start = {"t": {"0": 0}}
    latest = {"t": {"0": 8, "1": 8}}
    assert rate_limit(start, latest, 4, earliest_new={"t": {"1": 0}}) == {"t": {"0": 2, "1": 2}}
    # begin unknown for the new partition: it is left at latest for plan_ranges to judge
    assert rate_limit(start, latest, 4) == {"t": {"0": 4, "1": 8}}


def test_rate_limit_sequence_matches_the_reference_observation():
    start, latest, sizes = {"t": {"0": 0, "1": 0}}, {"t": {"0": 8, "1": 8}}, []
    while start != latest:
        end = rate_limit(start, latest, 4)
        sizes.append(sum(end["t"].values()) - sum(start["t"].values()))
        start = end
    assert sizes == [4, 4, 4, 4]


# -- data loss ------------------------------------------------------------------------------------------------
def test_plan_ranges_skips_empty_ranges_and_adds_new_partitions():
    got = plan_ranges({"t": {"0": 2, "1": 5}}, {"t": {"0": 4, "1": 5, "2": 3}}, {"t": {"2": 0}}, True)
    assert got == [("t", 0, 2, 4), ("t", 2, 0, 3)]


def test_plan_ranges_data_loss_fails_or_warns(caplog):
    with pytest.raises(DataLossError, match=r"offset went back from 5 to 2.*failOnDataLoss"):
        plan_ranges({"t": {"0": 5}}, {"t": {"0": 2}}, {}, True)
    with pytest.raises(DataLossError, match="t-1 are gone"):
        plan_ranges({"t": {"0": 0, "1": 0}}, {"t": {"0": 2}}, {}, True)
    with pytest.raises(DataLossError, match="starts from 4 instead of 0"):
        plan_ranges({"t": {"0": 0}}, {"t": {"0": 2, "1": 9}}, {"t": {"1": 4}}, True)
    with caplog.at_level(logging.WARNING, logger="kafkalab.spark"):
        assert plan_ranges({"t": {"0": 5, "1": 0}}, {"t": {"0": 2, "1": 3}}, {}, False) == [("t", 1, 0, 3)]
    assert "went back" in caplog.text and "failOnDataLoss=false" in caplog.text


def test_clamp_to_log(caplog):
    assert clamp_to_log("t", 0, 5, 9, 0, 9, True) == 5
    with pytest.raises(DataLossError, match="log now starts at 7"):
        clamp_to_log("t", 0, 5, 9, 7, 12, True)
    with caplog.at_level(logging.WARNING, logger="kafkalab.spark"):
        assert clamp_to_log("t", 0, 5, 9, 7, 12, False) == 7
        assert clamp_to_log("t", 0, 5, 9, 9, 12, False) is None               # nothing of [5, 9) left
        assert clamp_to_log("t", 0, 5, 9, 0, 3, False) is None               # the log is shorter now
    with pytest.raises(DataLossError, match="log ends at 3"):
        clamp_to_log("t", 0, 5, 9, 0, 3, True)
