"""The controller's event table: every event the controller queues has exactly one row, every row is queued
somewhere, every handler is a coroutine of KafkaController, and an unknown event is refused when queued."""
from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path

import pytest

from kafkalab.controller import EVENTS, KafkaController
from kafkalab.controller import controller as controller_module
from kafkalab.controller.controller import UnknownControllerEvent


def queued_events() -> set:
    """Every event name the controller's code (its module and its collaborators) queues: ``enqueue("x", ...)`` and
    ``watch("x", ...)`` calls."""
    names = set()
    nodes = [node for path in sorted(Path(controller_module.__file__).parent.glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))]
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("enqueue", "watch") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif not (node.func.attr == "enqueue" and isinstance(first, ast.Name)):
                pytest.fail(f"line {node.lineno}: an event name that is not a literal cannot be checked")
    return names


def test_every_queued_event_has_a_row_and_no_row_is_dead():
    queued = queued_events()
    assert queued - set(EVENTS) == set(), "queued but without a handler"
    assert set(EVENTS) - queued == set(), "rows no code ever queues"


def test_rows_name_coroutines_of_the_controller():
    for name, row in EVENTS.items():
        assert inspect.iscoroutinefunction(row.handler), name
        assert getattr(KafkaController, row.handler.__name__) is row.handler, name
        assert row.kafka_event and row.queued_by, name
    assert len({row.handler for row in EVENTS.values()}) == len(EVENTS)


def test_an_unknown_event_fails_when_queued():
    async def run():
        c = KafkaController(0, zk=None, channel=None)
        c.events = asyncio.Queue()
        with pytest.raises(UnknownControllerEvent, match="'broker_chnage'.*broker_change"):
            c.enqueue("broker_chnage")
        assert c.events.empty()
    asyncio.run(run())


def test_an_election_dropped_with_the_session_answers_not_controller():
    """Kafka's ``preempt``: a queued ReplicaLeaderElection (and ControlledShutdown) the expired session drops is
    answered NOT_CONTROLLER, never left waiting; a controller not started answers at once."""
    from kafkalab.protocol import ErrorCode

    async def run():
        c = KafkaController(0, zk=None, channel=None)
        idle = c.elect_leaders([("t", 0)], 0)
        assert {tp: e.error_code for tp, e in idle.result().items()} == {("t", 0): ErrorCode.NOT_CONTROLLER}
        c.events = asyncio.Queue()
        election = c.elect_leaders([("t", 0), ("t", 1)], 1)
        shutdown = c.controlled_shutdown(2, 5)
        c.session_expired()
        assert {tp: e.error_code for tp, e in election.result().items()} == {
            ("t", 0): ErrorCode.NOT_CONTROLLER, ("t", 1): ErrorCode.NOT_CONTROLLER}
        assert shutdown.result() == (ErrorCode.NOT_CONTROLLER, [])
        assert c.events.empty()
    asyncio.run(run())
