"""Lab 10 (``labs/10_consumer_groups.ipynb``): consumer groups, committed offsets, and the poll loop.

Theory of operation
-------------------
The lab kit of lab 10, one import for the notebook (``from kafkalab.labs import lab10``), in three parts:

* :mod:`.groups` -- the group protocol seen from the coordinator: Java's ``String.hashCode`` to the
  coordinator's partition, the consumer protocol's bytes, the range assignor, :class:`LabGroup` (a
  ``GroupCoordinator`` on a ``MockTime``), ``__consumer_offsets``
  decoded, and the checks of exercises 1-4;
* :mod:`.pictures` -- the group's state machine and its rebalance timeline;
* :mod:`.poll_loop` -- the consumer's side of offsets (Java's ``KafkaConsumer`` and its
  ``ConsumerCoordinator``, run as kafkalab's :class:`~kafkalab.clients.Consumer`): where a new group starts
  (``auto.offset.reset``), a poll loop too slow for ``max.poll.interval.ms``, auto-commit on its interval and
  the records a crash delivers twice, and the checks of exercises 5-6.
"""
from kafkalab.labs.lab10.groups import *  # noqa: F401,F403 -- the lab's one namespace
from kafkalab.labs.lab10.groups import __all__ as _groups
from kafkalab.labs.lab10.pictures import *  # noqa: F401,F403
from kafkalab.labs.lab10.pictures import __all__ as _pictures
from kafkalab.labs.lab10.poll_loop import *  # noqa: F401,F403
from kafkalab.labs.lab10.poll_loop import __all__ as _poll_loop

__all__ = [*_groups, *_pictures, *_poll_loop]
