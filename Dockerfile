# kbroker: a Kafka-protocol broker in Python — the container image.
#
#   make docker-image                                  # offline too: kbroker:latest, kbroker:<version>
#   docker build -t kbroker .                          # FROM python:3.11-slim
#   docker build --build-arg BASE=kbroker-base:bookworm -t kbroker .   # docker/make-base.sh
#   docker run -p 9092:9092 kbroker                    # one combined node, Kafka's image defaults
#
# Configured like Kafka's image (apache/kafka): KAFKA_* variables, CLUSTER_ID, a server.properties
# mounted in /mnt/shared/config (kbroker/container/env.py has the rules; README "Docker").
# Classic builder compatible (no BuildKit features): Debian's engine 20.10 builds it.
ARG BASE=python:3.11-slim

# --- deps: a venv with the pinned runtime dependencies (cached until the lock changes)
FROM ${BASE} AS deps
ARG PIP_INDEX_URL
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/kbroker/venv
COPY docker/requirements.lock /tmp/requirements.lock
RUN /opt/kbroker/venv/bin/pip install -q --only-binary=:all: -r /tmp/requirements.lock

# --- wheel: `python -m build --wheel` of the sources (the same wheel `make dist` makes; build
# isolation off: the pinned setuptools of docker/build.lock is the backend)
FROM deps AS wheel
COPY docker/build.lock /tmp/build.lock
RUN /opt/kbroker/venv/bin/pip install -q -r /tmp/build.lock
COPY pyproject.toml README.md /src/
COPY kbroker /src/kbroker
RUN /opt/kbroker/venv/bin/python -m build -q --wheel --no-isolation --outdir /dist /src >/dev/null

# --- app: kbroker installed from that wheel into /opt/kbroker/app (its dependencies are the
# deps stage's venv)
FROM deps AS app
COPY --from=wheel /dist /dist
RUN /opt/kbroker/venv/bin/pip install -q --no-deps --target /opt/kbroker/app /dist/kbroker-*.whl \
    && rm -rf /opt/kbroker/app/kbroker-*.dist-info/RECORD
# the code dataclasses and attrs generate, compiled once here and read by `kbroker serve` at
# start (kbroker/common/codecache.py: a third of a start's instructions); it starts a node on
# 127.0.0.1 in a temporary directory and writes kbroker/common/__pycache__/codecache.*.bin;
# no start-up module image (kbroker/common/modimage.py): it is kept per sys.path, and this
# stage's (PYTHONPATH) is not the runtime's (kbroker-app.pth), so it would be 5 MB unused
RUN PYTHONPATH=/opt/kbroker/app /opt/kbroker/venv/bin/python -m kbroker.node.codecache_build --no-module-image

# --- runtime-venv: the deps venv without the installer (pip, setuptools: build leftovers),
# without what never runs (trio's own tests; zstandard's cffi backend — its C backend is the one
# imported), with a .pth that puts /opt/kbroker/app on the path
FROM deps AS runtime-venv
RUN /opt/kbroker/venv/bin/python -m pip uninstall -q -y pip setuptools \
    && site=$(/opt/kbroker/venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") \
    && rm -rf "$site/trio/_tests" "$site/trio/_core/_tests" "$site"/zstandard/_cffi.*.so \
    && /opt/kbroker/venv/bin/python -c "import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()['purelib'], 'kbroker-app.pth').write_text('/opt/kbroker/app\n')" \
    && rm -f /opt/kbroker/venv/bin/activate*

# --- runtime
FROM ${BASE}
ARG KBROKER_UID=1000
ARG KBROKER_GID=1000
LABEL org.opencontainers.image.title="kbroker" \
      org.opencontainers.image.description="A broker that speaks Apache Kafka's wire protocol, in Python on trio"
ENV PATH=/opt/kbroker/app/bin:/opt/kbroker/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The start scripts of the images that container tools were written for, each starting
# kbroker (docker/compat; README "testcontainers"): Confluent's /etc/confluent/docker/{configure,
# ensure,launch,run,bash-config}, apache/kafka's /etc/kafka/docker/run, and the kafka-storage
# and zookeeper-server-start commands those scripts call.
COPY docker/compat/confluent/ /etc/confluent/docker/
COPY docker/compat/kafka/run /etc/kafka/docker/run
COPY docker/compat/bin/ /usr/local/bin/
# a fixed uid/gid; the data, config and Kafka-compatible data dirs belong to group 0 and are
# group-writable, so `-u <any uid>` (whose group is 0) and OpenShift-style random uids work.
# /etc/confluent/docker and /etc/kafka are writable too: tools edit those scripts in place
# (sed -i) and configure writes /etc/kafka/kafka.properties.
RUN groupadd --gid "$KBROKER_GID" kbroker \
    && useradd --uid "$KBROKER_UID" --gid "$KBROKER_GID" --no-create-home \
        --home-dir /var/lib/kbroker --shell /usr/sbin/nologin kbroker \
    && mkdir -p /var/lib/kbroker /opt/kbroker/config /etc/kbroker/docker /mnt/shared/config \
        /var/lib/kafka/data \
    && chown "$KBROKER_UID:0" /var/lib/kbroker /opt/kbroker/config /var/lib/kafka/data \
    && chmod 0775 /var/lib/kbroker /opt/kbroker/config /var/lib/kafka/data \
    && chown -R "$KBROKER_UID:0" /etc/confluent/docker /etc/kafka \
    && chmod -R g+w /etc/confluent/docker /etc/kafka
COPY --from=runtime-venv /opt/kbroker/venv /opt/kbroker/venv
COPY docker/server.properties /etc/kbroker/docker/server.properties
COPY --from=app /opt/kbroker/app /opt/kbroker/app

USER kbroker
WORKDIR /var/lib/kbroker
VOLUME ["/var/lib/kbroker"]
# PLAINTEXT_HOST (clients from the host) in the defaults; 29092/29093 are in-container;
# 9404 is the HTTP listener (/ready, /health, /metrics) of nodes with the broker role
EXPOSE 9092 9404
# the probe asks GET /ready on the node's HTTP listener (the image's default for brokers);
# without one, the node's client listener (ApiVersions, then Metadata: a live broker with a
# controller)
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-m", "kbroker.container.healthcheck"]
# SIGTERM (docker stop) reaches kbroker as PID 1: graceful shutdown within --shutdown-timeout
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "kbroker.container.entrypoint"]
CMD ["serve"]
