"""kafkalab.cluster -- the embedded cluster: brokers and their coordination store run in-process for notebooks,
the ``kafkalab cluster`` command and tests, with the faults it can suffer (``faults``), the Jepsen-style checker
that judges what clients saw (``history``) and the handler that keeps the brokers' log lines off a notebook's
stderr (``broker_log``).

It is the top of the broker side: it assembles ``server``, ``zk`` and ``controller``, and only the command line,
the lab kit and the tests stand above it. Kafka keeps the equivalent (``KafkaClusterTestKit``) in its test
sources; here it is the product's front door (``from kafkalab import Cluster``), so it lives in the library."""
from kafkalab.cluster.broker_log import BrokerLog
from kafkalab.cluster.cluster import Cluster
from kafkalab.cluster.faults import ZK, LinkTable
from kafkalab.cluster.history import History, CheckResult
from kafkalab.cluster.waiting import ConditionNotMet

__all__ = ["BrokerLog", "Cluster", "ZK", "LinkTable", "History", "CheckResult", "ConditionNotMet"]
