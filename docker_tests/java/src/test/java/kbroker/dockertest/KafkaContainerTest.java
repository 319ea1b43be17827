package kbroker.dockertest;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.testcontainers.kafka.ConfluentKafkaContainer;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * testcontainers-java's Kafka modules (for apache/kafka and for confluentinc/cp-kafka images),
 * given the image under test: each starts it with its own command, start script and variables,
 * waits for its log line, and a record makes the round trip through the address the module
 * hands out (the mapped port the broker advertises).
 */
class KafkaContainerTest {

    static final String IMAGE = System.getenv().getOrDefault("KBROKER_IMAGE", "kbroker:test");
    /** The pytest session running this test (docker_tests/conftest.py): the label's value. */
    static final String OWNER = System.getenv().getOrDefault("KBROKER_DOCKER_TEST_OWNER", "1");

    @Test
    void apacheKafkaModule() throws Exception {
        DockerImageName image = DockerImageName.parse(IMAGE).asCompatibleSubstituteFor("apache/kafka");
        try (KafkaContainer kafka = new KafkaContainer(image).withLabel("kbroker-docker-test", OWNER)) {
            kafka.start();
            roundTrip(kafka.getBootstrapServers(), "tc-java-apache");
        }
    }

    /** The module's Confluent variant: the same variables, /etc/confluent/docker/run. */
    @Test
    void confluentKafkaModule() throws Exception {
        DockerImageName image = DockerImageName.parse(IMAGE).asCompatibleSubstituteFor("confluentinc/cp-kafka");
        try (ConfluentKafkaContainer kafka = new ConfluentKafkaContainer(image).withLabel("kbroker-docker-test", OWNER)) {
            kafka.start();
            roundTrip(kafka.getBootstrapServers(), "tc-java-confluent");
        }
    }

    static void roundTrip(String bootstrap, String topic) throws Exception {
        Map<String, Object> producerConfig = Map.of(
            "bootstrap.servers", bootstrap, "acks", "all",
            "key.serializer", StringSerializer.class, "value.serializer", StringSerializer.class);
        RecordMetadata sent;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
            sent = producer.send(new ProducerRecord<>(topic, "k", "from-java")).get(60, TimeUnit.SECONDS);
        }
        Map<String, Object> consumerConfig = Map.of(
            "bootstrap.servers", bootstrap, "enable.auto.commit", "false",
            "key.deserializer", StringDeserializer.class, "value.deserializer", StringDeserializer.class);
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig)) {
            TopicPartition tp = new TopicPartition(topic, sent.partition());
            consumer.assign(List.of(tp));
            consumer.seek(tp, sent.offset());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (seen.isEmpty() && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    seen.add(r.key() + "=" + r.value());
                }
            }
        }
        assertEquals(List.of("k=from-java"), seen);
    }
}
