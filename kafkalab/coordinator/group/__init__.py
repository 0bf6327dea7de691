"""The classic consumer-group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) and committed offsets.

Rooms, mirroring ``kafka/coordinator/group``:

* :mod:`.state` -- the group state machine as a table (Kafka's ``GroupState``).
* :mod:`.member_metadata` -- one member (``MemberMetadata``).
* :mod:`.group_metadata` -- one group: members, generation, protocol, leader, offsets (``GroupMetadata``).
* :mod:`.records` -- the key/value formats of ``__consumer_offsets`` and loading them back
  (``GroupMetadataManager``'s serde and ``doLoadGroupsAndOffsets``).
* :mod:`.coordinator_config` -- the ``group.*`` / ``offsets.*`` broker keys (``GroupCoordinatorConfig``).
* :mod:`.coordinator` -- the request handling and timers (``GroupCoordinator``, ``DelayedJoin``,
  ``DelayedHeartbeat``, ``DelayedSync``).
* :mod:`.offsets_and_admin` -- OffsetCommit/OffsetFetch and the admin views, a collaborator the coordinator
  owns and forwards to (``GroupCoordinator.handleCommitOffsets`` ... ``handleDeleteOffsets``).
"""
from kafkalab.coordinator.group.coordinator import (GroupConfig, GroupCoordinator, JoinGroupResult,  # noqa: F401
                                                    SyncGroupResult)
from kafkalab.coordinator.group.state import GroupState, VALID_PREVIOUS_STATES  # noqa: F401
