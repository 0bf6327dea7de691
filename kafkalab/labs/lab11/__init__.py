"""Lab 11 (``labs/11_transactions.ipynb``): idempotence and transactions.

Theory of operation
-------------------
The lab kit of lab 11, one import for the notebook (``from kafkalab.labs import lab11``), in two parts:

* :mod:`.roles` -- the roles of a transaction: the internal topics placed so each role has its own broker, the
  requests the brokers received as a sequence diagram, the sans-IO transaction coordinator driven step by step
  on a MockTime with its state machine drawn, and the exercises' checks;
* :mod:`.log` -- a transactional partition's log: committed, aborted and open records, markers, the LSO and the
  high watermark, and ``kafkalab dump-log``'s view of it.
"""
from kafkalab.labs.lab11.log import *  # noqa: F401,F403 -- the lab's one namespace
from kafkalab.labs.lab11.log import __all__ as _log
from kafkalab.labs.lab11.roles import *  # noqa: F401,F403
from kafkalab.labs.lab11.roles import __all__ as _roles

__all__ = [*_roles, *_log]
