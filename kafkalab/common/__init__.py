"""kafkalab.common -- the ground floor every room may stand on: clocks, schedulers, the event-loop thread and the
configuration definition (:mod:`kafkalab.common.config`, Kafka's ``ConfigDef``).

Nothing here imports any other part of kafkalab.
"""
from kafkalab.common.loop_thread import LoopThread
from kafkalab.common.scheduler import MockScheduler, Scheduler, ScheduledTask, ThreadScheduler
from kafkalab.common.time import MockTime, SystemTime, Time

__all__ = ["Time", "SystemTime", "MockTime", "Scheduler", "ScheduledTask", "ThreadScheduler", "MockScheduler",
           "LoopThread"]
