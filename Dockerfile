# kbroker: a Kafka-protocol broker. Build: docker build -t kbroker .
# Run:   docker run -p 9092:9092 -e KBROKER_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 kbroker
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    KBROKER_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    KBROKER_OPTS=""

WORKDIR /opt/kbroker
COPY pyproject.toml README.md ./
COPY kbroker ./kbroker
RUN pip install . && useradd --system --home /var/lib/kbroker kbroker \
    && mkdir -p /var/lib/kbroker && chown kbroker /var/lib/kbroker

USER kbroker
VOLUME /var/lib/kbroker
EXPOSE 9092

# exec: kbroker is PID 1 and gets SIGTERM from `docker stop` (graceful shutdown)
CMD exec kbroker serve --listen 0.0.0.0:9092 --data-dir /var/lib/kbroker \
    --override advertised.listeners="$KBROKER_ADVERTISED_LISTENERS" $KBROKER_OPTS
