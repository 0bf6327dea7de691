"""The transaction coordinator (KIP-98): transactional ids, their state in ``__transaction_state``, the markers.

Rooms, mirroring ``kafka/coordinator/transaction``:

* :mod:`.state` -- the state machine as a table (Kafka's ``TransactionState``).
* :mod:`.transaction_metadata` -- one transactional id and its two-step transitions (``TransactionMetadata``).
* :mod:`.transaction_log` -- the key/value formats of ``__transaction_state`` and loading them (``TransactionLog``).
* :mod:`.transaction_config` -- the ``transaction.*`` broker keys (``TransactionLogConfigs``,
  ``TransactionStateManagerConfigs``).
* :mod:`.state_manager` -- the cache per partition, coordinator epochs, appends, load, the scanners' queries
  (``TransactionStateManager``).
* :mod:`.coordinator` -- the requests and the timers (``TransactionCoordinator``).
* :mod:`.marker_channel` -- markers queued per leader and the answers' table (``TransactionMarkerChannelManager``,
  ``TransactionMarkerRequestCompletionHandler``); :mod:`.marker_sender` sends them over the inter-broker listener.
"""
from kafkalab.coordinator.transaction.coordinator import (InitProducerIdResult, TransactionCoordinator,  # noqa: F401
                                                          TransactionDescription)
from kafkalab.coordinator.transaction.marker_channel import TransactionMarkerChannelManager  # noqa: F401
from kafkalab.coordinator.transaction.state import TransactionState, VALID_PREVIOUS_STATES  # noqa: F401
from kafkalab.coordinator.transaction.state_manager import MemoryTransactionLog  # noqa: F401
from kafkalab.coordinator.transaction.transaction_config import (TRANSACTION_COORDINATOR_CONFIGS,  # noqa: F401
                                                                 TransactionConfig)
from kafkalab.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC  # noqa: F401
