"""Building a SparkSession that can talk to a Kafka-protocol broker (kbroker or Kafka).

`connector_jars()` returns the jars of Spark's Kafka connector resolved by
tools/spark_dist/fetch.sh (run here when the cache is missing), and spark-avro's
(tools/spark_dist/fetch_avro.sh); `spark_session()` builds a
local session with them as `spark.jars`. The example pipeline (examples/) does the same
thing in a dozen lines of its own, so that it reads as a plain Spark job.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FETCH = ROOT / "tools" / "spark_dist" / "fetch.sh"
FETCH_AVRO = ROOT / "tools" / "spark_dist" / "fetch_avro.sh"


def connector_jars() -> list[str]:
    """Absolute paths of the connector jars (fetching them with Maven if needed)."""
    out = subprocess.run(["bash", str(FETCH)], check=True, capture_output=True, text=True)
    folder = Path(out.stdout.strip().splitlines()[-1])
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if len(jars) < 4:
        raise RuntimeError(f"expected the four connector jars in {folder}, found {jars}")
    return jars + avro_jars()


def avro_jars() -> list[str]:
    """spark-avro at the connector's version (tools/spark_dist/fetch_avro.sh), for from_avro."""
    out = subprocess.run(["bash", str(FETCH_AVRO)], check=True, capture_output=True, text=True)
    return sorted(str(p) for p in Path(out.stdout.strip().splitlines()[-1]).glob("*.jar"))


def spark_session(app: str, cores: int = 2):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark otherwise picks the first non-loopback interface for the driver.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app)
        .config("spark.jars", ",".join(connector_jars()))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        # The suite's data is tiny: C1 alone and a serial GC spend far less CPU on the driver's
        # start and on compiling than the default tiered C2 and G1 (as the suites' other JVMs).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        # Micro-batches are small here; let the streaming engine notice new data quickly.
        .config("spark.sql.streaming.pollingDelay", "100ms")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
