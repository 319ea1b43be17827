// Prints the broker configuration definitions of the Kafka jars on the class path, one
// tab-separated line per key: name, type, default (or <none>/<null>), importance,
// internal (true/false), update mode (read-only/per-broker/cluster-wide), validator text,
// broker synonyms (comma-separated); then '#topic', topic key, broker key lines;
// then '#security', name lines (dynamic only per listener). Used by tools/gen_broker_configs.py; facts only.
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;

public class KafkaBrokerConfigDump {
    public static void main(String[] args) {
        ConfigDef def = kafka.server.KafkaConfig$.MODULE$.configDef();
        Map<String, String> modes = org.apache.kafka.server.config.DynamicBrokerConfig.dynamicConfigUpdateModes();
        Set<String> dynamic = org.apache.kafka.server.config.DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS;
        TreeMap<String, ConfigDef.ConfigKey> keys = new TreeMap<>(def.configKeys());
        for (ConfigDef.ConfigKey k : keys.values()) {
            String dflt;
            if (k.defaultValue == ConfigDef.NO_DEFAULT_VALUE) dflt = "<none>";
            else if (k.defaultValue == null) dflt = "<null>";
            else dflt = ConfigDef.convertToString(k.defaultValue, k.type);
            String mode = modes.getOrDefault(k.name, dynamic.contains(k.name) ? "cluster-wide" : "read-only");
            List<String> syn = org.apache.kafka.server.config.DynamicBrokerConfig.brokerConfigSynonyms(k.name, false);
            System.out.println(String.join("\t", k.name, k.type.name().toLowerCase(Locale.ROOT),
                esc(dflt), k.importance == null ? "" : k.importance.name().toLowerCase(Locale.ROOT),
                String.valueOf(k.internalConfig), mode,
                k.validator == null ? "" : esc(k.validator.toString()), String.join(",", syn)));
        }
        // topic config -> the broker config it inherits from (DescribeConfigs synonyms)
        TreeMap<String, String> topic = new TreeMap<>(org.apache.kafka.server.config.ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS);
        for (Map.Entry<String, String> e : topic.entrySet())
            System.out.println("#topic\t" + e.getKey() + "\t" + e.getValue());
        // security configs that may be updated dynamically only with a listener prefix
        for (String name : new TreeSet<>(org.apache.kafka.server.config.DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS))
            System.out.println("#security\t" + name);
    }
    static String esc(String s) { return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n"); }
}
