// testcontainers-go's Kafka module starting kbroker's image (docker_tests/test_testcontainers.py
// runs `go test` here, inside `make docker-test`). The module was written for Confluent's
// confluent-local image: it replaces the entrypoint with a wait loop, copies in a start script
// that exports the advertised listeners (the mapped port), edits and runs
// /etc/confluent/docker/configure, then runs /etc/confluent/docker/launch, and waits for a log
// line. The image is KBROKER_IMAGE (default kbroker:test); Ryuk is disabled by the environment
// (TESTCONTAINERS_RYUK_DISABLED=true), its image cannot be pulled here.
package dockertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/kafka"
)

func TestKafkaModuleStartsKbroker(t *testing.T) {
	image := os.Getenv("KBROKER_IMAGE")
	if image == "" {
		image = "kbroker:test"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// the label's value names the pytest session that runs this test (docker_tests/conftest.py)
	owner := os.Getenv("KBROKER_DOCKER_TEST_OWNER")
	if owner == "" {
		owner = "1"
	}
	ctr, err := kafka.Run(ctx, image, testcontainers.WithLabels(map[string]string{"kbroker-docker-test": owner}))
	defer func() {
		// the module's `sh -c` is PID 1 and ignores SIGTERM: no point waiting for it
		if err := testcontainers.TerminateContainer(ctr, testcontainers.StopTimeout(0)); err != nil {
			t.Errorf("terminate: %v", err)
		}
	}()
	if err != nil {
		t.Fatalf("kafka.Run(%s): %v", image, err)
	}
	brokers, err := ctr.Brokers(ctx)
	if err != nil {
		t.Fatalf("brokers: %v", err)
	}

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		t.Fatalf("producer on %v: %v", brokers, err)
	}
	partition, offset, err := producer.SendMessage(&sarama.ProducerMessage{
		Topic: "tc-go", Key: sarama.StringEncoder("k"), Value: sarama.StringEncoder("from-go"),
	})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	producer.Close()

	consumer, err := sarama.NewConsumer(brokers, cfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition("tc-go", partition, offset)
	if err != nil {
		t.Fatalf("consume partition: %v", err)
	}
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		if string(m.Key) != "k" || string(m.Value) != "from-go" {
			t.Fatalf("read %q=%q, want k=from-go", m.Key, m.Value)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no record within 60 s at %d/%d", partition, offset)
	}
}
