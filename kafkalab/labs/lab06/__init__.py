"""Lab 06 (``labs/06_the_log.ipynb``): the log on disk.

Theory of operation
-------------------
The lab kit of lab 06, one import for the notebook (``from kafkalab.labs import lab06``), in three parts:

* :mod:`.files` -- a log dir read straight from disk: files, segments, indexes, the lookup, ``dump-log``,
  the pictures, the exercises' checks;
* :mod:`.wire` -- the lab's requests on a bare connection, and the message formats v0, v1 and v2 side by side;
* :mod:`.zero_copy` -- one Fetch over PLAINTEXT and over SSL, and the broker's counters of what went out with
  ``sendfile`` and what was copied (section 12).
"""
from kafkalab.labs.lab06.files import *  # noqa: F401,F403 -- the lab's one namespace
from kafkalab.labs.lab06.files import __all__ as _files
from kafkalab.labs.lab06.wire import *  # noqa: F401,F403
from kafkalab.labs.lab06.wire import __all__ as _wire
from kafkalab.labs.lab06.zero_copy import *  # noqa: F401,F403
from kafkalab.labs.lab06.zero_copy import __all__ as _zero_copy

__all__ = [*_files, *_wire, *_zero_copy]
