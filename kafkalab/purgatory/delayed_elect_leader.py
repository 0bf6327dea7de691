"""DelayedElectLeader: an ElectLeaders request waiting until this broker's metadata shows the new leaders.

Theory of operation
-------------------
The controller answers an election as soon as it has written the new states to ZooKeeper and queued its
LeaderAndIsr and UpdateMetadata requests -- before any broker has heard of them. A client that is told "done"
should find the new leader in Metadata, so the broker that got the ElectLeaders request does not answer yet: it
parks the request here with the leader the controller chose for each elected partition (``expected_leaders``)
and the outcomes already known (``results``: partitions that needed no election, unknown ones, failures).

Each UpdateMetadata that reaches the broker calls ``check_and_complete`` for the partitions it carries; the
operation looks at the broker's metadata (``leader_of(topic_partition)``) and moves every partition whose leader
there is the expected one from *waiting* to *done* (no error). When nothing waits, it completes. If
``timeout_ms`` of the request pass first, the partitions still waiting answer REQUEST_TIMED_OUT -- the election
has happened all the same; only its propagation was not seen in time.

The operation never imports the broker: ``leader_of`` returns the leader id the metadata shows (or -1) and
``response_callback`` receives ``{topic_partition: None (elected) or ApiException}``.

Mirrors ``core/src/main/scala/kafka/server/DelayedElectLeader.scala``.
"""
from __future__ import annotations

from typing import Callable, Hashable, Mapping, Optional

from kafkalab.protocol import ApiException, ErrorCode
from kafkalab.purgatory.delayed_operation import DelayedOperation

__all__ = ["DelayedElectLeader"]


class DelayedElectLeader(DelayedOperation):
    def __init__(self, delay_ms: int, expected_leaders: Mapping[Hashable, int],
                 results: Mapping[Hashable, Optional[ApiException]], leader_of: Callable[[Hashable], int],
                 response_callback: Callable[[dict], None]):
        super().__init__(delay_ms)
        self.waiting = dict(expected_leaders)
        self.results: dict = dict(results)
        self.leader_of = leader_of
        self.response_callback = response_callback

    def _update_waiting(self) -> None:
        for tp, leader in list(self.waiting.items()):
            if self.leader_of(tp) == leader:
                del self.waiting[tp]
                self.results[tp] = None

    def try_complete(self) -> bool:
        self._update_waiting()
        return not self.waiting and self.force_complete()

    def on_complete(self) -> None:
        # Also the timeout's path: whatever still waits has timed out.
        self._update_waiting()
        timed_out = {tp: ApiException(ErrorCode.REQUEST_TIMED_OUT) for tp in self.waiting}
        self.response_callback({**timed_out, **self.results})
