// sarama_old: Debian's Sarama 1.22 speaking to a broker as Kafka 0.10.1 (Produce v2 = magic 1, Fetch v3).
//
// It produces -count records to partition 0 of -topic (synchronously, acks=all, -codec none|gzip|snappy|lz4),
// then consumes partition 0 from offset 0 until it has them back, and prints one JSON line per record read:
// {"offset":..,"key":..,"value":..,"timestamp_ms":..}. Any failure exits non-zero with the error on stderr.
// Built by tests/interop/test_old_clients_sarama.py in GOPATH mode from Debian's golang-github-shopify-sarama-dev.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/Shopify/sarama"
)

type record struct {
	Offset      int64  `json:"offset"`
	Key         string `json:"key"`
	Value       string `json:"value"`
	TimestampMs int64  `json:"timestamp_ms"`
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma separated")
	topic := flag.String("topic", "sarama", "topic (partition 0 is used)")
	count := flag.Int("count", 5, "records to produce and read back")
	codec := flag.String("codec", "none", "none, gzip, snappy or lz4")
	flag.Parse()

	config := sarama.NewConfig()
	config.Version = sarama.V0_10_1_0
	config.ClientID = "sarama-old"
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Return.Successes = true
	config.Producer.Partitioner = sarama.NewManualPartitioner
	config.Net.DialTimeout = 5 * time.Second
	config.Net.ReadTimeout = 5 * time.Second
	config.Net.WriteTimeout = 5 * time.Second
	switch *codec {
	case "gzip":
		config.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		config.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		config.Producer.Compression = sarama.CompressionLZ4
	}

	client, err := sarama.NewClient(strings.Split(*brokers, ","), config)
	if err != nil {
		fail("client", err)
	}
	defer client.Close()

	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		fail("producer", err)
	}
	base := time.Unix(1700000000, 0)
	var messages []*sarama.ProducerMessage
	for i := 0; i < *count; i++ {
		messages = append(messages, &sarama.ProducerMessage{
			Topic: *topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	if err := producer.SendMessages(messages); err != nil {
		fail("produce", err)
	}

	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		fail("consumer", err)
	}
	partition, err := consumer.ConsumePartition(*topic, 0, 0)
	if err != nil {
		fail("consume", err)
	}
	out := json.NewEncoder(os.Stdout)
	deadline := time.After(20 * time.Second)
	for read := 0; read < *count; {
		select {
		case m := <-partition.Messages():
			out.Encode(record{m.Offset, string(m.Key), string(m.Value), m.Timestamp.UnixNano() / int64(time.Millisecond)})
			read++
		case err := <-partition.Errors():
			fail("fetch", err)
		case <-deadline:
			fail("consume", fmt.Errorf("read %d of %d records before the deadline", read, *count))
		}
	}
	partition.Close()
	producer.Close()
}
