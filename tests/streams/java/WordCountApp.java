// A Kafka Streams word count for the streams group tests (KIP-1071): group.protocol=streams.
//
// Usage: java WordCountApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR APP_SERVER_PORT
//
// Reads lines from INPUT, splits them into words, re-keys by word (a repartition topic),
// counts per word (a state store with a changelog topic) and writes word -> count (as a
// string) to OUTPUT. Once a second it prints its state and the tasks it runs, one line each:
//   STATE RUNNING
//   TASKS active=0_0,0_1 standby=1_2
//   HOSTS 7301=lines-0,lines-1,... 7302=...
// so the test sees how the broker shares the tasks between instances, and what interactive
// queries learn of every instance (the broker's PartitionsByUserEndpoint).
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

public class WordCountApp {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + args[5]);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder b = new StreamsBuilder();
        b.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((k, w) -> !w.isEmpty())
            .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .map((w, n) -> KeyValue.pair(w, Long.toString(n)))
            .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            done.countDown();
        }));
        streams.start();
        while (done.getCount() > 0) {
            List<String> active = new ArrayList<>();
            List<String> standby = new ArrayList<>();
            for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                for (TaskMetadata m : t.activeTasks()) {
                    active.add(m.taskId().toString());
                }
                for (TaskMetadata m : t.standbyTasks()) {
                    standby.add(m.taskId().toString());
                }
            }
            Collections.sort(active);
            Collections.sort(standby);
            System.out.println("TASKS active=" + String.join(",", active)
                               + " standby=" + String.join(",", standby));
            List<String> hosts = new ArrayList<>();
            if (streams.state() == KafkaStreams.State.RUNNING) {
                for (StreamsMetadata m : streams.metadataForAllStreamsClients()) {
                    List<String> parts = new ArrayList<>();
                    m.topicPartitions().forEach(tp -> parts.add(tp.topic() + "-" + tp.partition()));
                    Collections.sort(parts);
                    hosts.add(m.hostInfo().port() + "=" + String.join(",", parts));
                }
            }
            Collections.sort(hosts);
            System.out.println("HOSTS " + String.join(" ", hosts));
            System.out.flush();
            done.await(1, java.util.concurrent.TimeUnit.SECONDS);
        }
    }
}
