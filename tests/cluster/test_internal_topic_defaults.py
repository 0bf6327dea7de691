"""A cluster smaller than three brokers caps the internal topics' replication settings, so that groups and
transactions work without overrides (Kafka's defaults want three brokers, two of them in sync)."""
from kafkalab import Cluster
from kafkalab.clients import Consumer, Producer


def test_a_single_broker_cluster_commits_a_transaction_without_overrides():
    with Cluster(brokers=1) as cluster:
        config = cluster._broker_config(0)
        assert config["transaction.state.log.replication.factor"] == 1
        assert config["transaction.state.log.min.isr"] == 1
        cluster.create_topic("out", partitions=1)
        with Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "solo",
                       "linger.ms": 0, "max.block.ms": 20_000}) as producer:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send("out", b"committed", partition=0)
            producer.commit_transaction()
        with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "isolation.level": "read_committed",
                       "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([("out", 0)])
            values = []
            for _ in range(50):
                values += [r.value for r in consumer.poll(0.2)]
                if values:
                    break
        assert values == [b"committed"]


def test_three_brokers_keep_kafkas_defaults_and_overrides_win(tmp_path):
    three = Cluster(brokers=3, log_dirs=str(tmp_path))          # not started: only its configs are read
    assert three._broker_config(0)["transaction.state.log.replication.factor"] == 3
    assert three._broker_config(0)["transaction.state.log.min.isr"] == 2
    two = Cluster(brokers=2, log_dirs=str(tmp_path), overrides={"transaction.state.log.min.isr": 1})
    assert two._broker_config(1)["transaction.state.log.min.isr"] == 1
    assert two._broker_config(1)["transaction.state.log.replication.factor"] == 2
