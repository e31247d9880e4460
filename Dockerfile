# adr-stream image: the services' `adr` CLI (consume, calibrate, leaderboard, check, topics,
# replay). Used by docker-compose.yml and deploy/k8s. Build: docker build -t adr-stream:0.1.0 .
#
# Two stages: the first builds the wheel and installs it into a virtual environment; building it
# compiles the engine and the consumer's hot path with mypyc (setup.py, runtime/compiled.py;
# about twice the throughput of the pure modules, which stay the reference), and the stage fails
# unless `python -m runtime.compiled status` says "compiled". The second copies that environment,
# without the compiler.
#
# The image carries the services only: stack/ (the local no-Docker stack), loadgen/ (`adr
# simulate`) and evaluation/ (`adr evaluate`) are for development (`pip install -e .[dev]`, the
# `[eval]` extra) and are not copied, so the wheel built here leaves them out (pyproject's
# package list names what exists). `adr simulate` for docker-compose is the `simulator` target
# (docker build --target simulator): the same build plus loadgen/.
#
# The base is pinned by digest: a rebuild gets the same OS and Python bits, and a moved tag
# changes nothing until someone moves the digest here (docker buildx imagetools inspect
# python:3.11-slim prints the current one; tests/deploy/test_image.py checks that every FROM
# is pinned). This digest is one that public projects pin python:3.11-slim to, found in two
# unrelated repositories (a Dockerfile pulling it through AWS's mirror of Docker Hub's library,
# and a test that builds a Dockerfile FROM it); it was not pulled here (no Docker on the
# development machine): a first build confirms it resolves.
# VERSION and REVISION fill the OCI labels: docker build --build-arg
# VERSION=$(adr --version | cut -d' ' -f2) --build-arg REVISION=$(git rev-parse HEAD) .
ARG BASE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
ARG VERSION=0.1.0
ARG REVISION=unknown

FROM ${BASE} AS build

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml setup.py README.md constraints.txt ./
COPY adr_cli ./adr_cli
COPY consumer ./consumer
COPY engine ./engine
COPY runtime ./runtime
COPY leaderboard ./leaderboard
COPY redis_layout ./redis_layout
COPY schemas ./schemas
COPY serve ./serve
COPY tierjob ./tierjob
# The versions the tests ran with (constraints.txt; pyproject's [build-system] pins mypy, which
# pip installs only into the isolated build environment). `status` from / : not the sources.
RUN python -m venv /opt/adr \
    && /opt/adr/bin/pip install -c constraints.txt . \
    && cd / \
    && /opt/adr/bin/python -m runtime.compiled status

# `adr simulate`: the services' build plus loadgen/ (docker-compose's simulate service).
FROM build AS build-simulator
COPY loadgen ./loadgen
RUN /opt/adr/bin/pip install --force-reinstall --no-deps -c constraints.txt . \
    && cd / \
    && /opt/adr/bin/python -m runtime.compiled status

FROM ${BASE} AS runtime
ARG VERSION
ARG REVISION
# The OCI image-spec's pre-defined annotation keys, as labels.
LABEL org.opencontainers.image.title="adr-stream" \
      org.opencontainers.image.description="Real-time Adaptive Dynamic Rating for free-for-all arenas: Kafka in, Redis leaderboards out" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/adr/bin:$PATH
RUN useradd --system --uid 10001 --no-create-home adr
WORKDIR /
# Metrics ports: adr consume 9108, adr calibrate --every 9109.
EXPOSE 9108 9109
ENTRYPOINT ["adr"]
CMD ["--help"]

FROM runtime AS simulator
LABEL org.opencontainers.image.title="adr-stream-simulator"
COPY --from=build-simulator /opt/adr /opt/adr
USER 10001:10001

# The default target (last): the services.
FROM runtime AS service
COPY --from=build /opt/adr /opt/adr
USER 10001:10001
