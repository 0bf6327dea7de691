"""kafkalab.purgatory -- where requests wait: the timing wheel, delayed operations and the purgatory.

Rooms inside:

* :mod:`~kafkalab.purgatory.timing_wheel` -- Kafka's hierarchical timing wheel (TimerTask, buckets, overflow
  wheels);
* :mod:`~kafkalab.purgatory.timer` -- ``SystemTimer``: the wheel driven by a clock (sans-IO ``poll``, Kafka's
  ``advance_clock``, an asyncio reaper) and the views a lab draws;
* :mod:`~kafkalab.purgatory.delayed_operation` and :mod:`~kafkalab.purgatory.purgatory` -- the generic
  contract: try-complete, watch, check again, complete exactly once, expire;
* :mod:`~kafkalab.purgatory.delayed_produce` / :mod:`~kafkalab.purgatory.delayed_fetch` -- acks=all and
  ``fetch.min.bytes``, against small interfaces so this room never imports the broker;
* :mod:`~kafkalab.purgatory.delayed_elect_leader` -- an ElectLeaders request waiting for the new leaders.

Layering: imports only :mod:`kafkalab.common` (clocks, the Yammer ``Meter`` of ``ExpiresPerSec``) and
:mod:`kafkalab.protocol` (error codes).
"""
from kafkalab.purgatory.delayed_elect_leader import DelayedElectLeader
from kafkalab.purgatory.delayed_fetch import (DelayedFetch, FetchParams, FetchPartitionInfo, FetchPartitionStatus,
                                              LogOffsetSnapshot)
from kafkalab.purgatory.delayed_operation import DelayedOperation
from kafkalab.purgatory.delayed_produce import (DelayedProduce, ProducePartitionStatus,
                                                check_enough_replicas_reach_offset)
from kafkalab.common.yammer import Meter
from kafkalab.purgatory.purgatory import DelayedOperationPurgatory, TopicPartitionOperationKey
from kafkalab.purgatory.timer import BucketView, SystemTimer, WheelView
from kafkalab.purgatory.timing_wheel import FunctionTask, TimerTask, TimerTaskEntry, TimerTaskList, TimingWheel

__all__ = ["TimerTask", "FunctionTask", "TimerTaskEntry", "TimerTaskList", "TimingWheel", "SystemTimer",
           "WheelView", "BucketView", "DelayedOperation", "DelayedOperationPurgatory", "TopicPartitionOperationKey",
           "Meter", "DelayedProduce", "ProducePartitionStatus", "check_enough_replicas_reach_offset",
           "DelayedFetch", "FetchParams", "FetchPartitionInfo", "FetchPartitionStatus", "LogOffsetSnapshot",
           "DelayedElectLeader"]
