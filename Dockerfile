# adr-stream image: the `adr` CLI (consume, calibrate, leaderboard, simulate, ...).
# Used by docker-compose.yml and deploy/k8s. Build: docker build -t adr-stream:0.1.0 .
#
# Two stages: the first installs the package into a virtual environment and compiles the engine
# and the consumer's hot path with mypyc (runtime/compiled.py; about twice the throughput of the
# pure modules, which stay the reference); the second copies that environment, without the
# compiler. `python -m runtime.compiled status` in the image prints "compiled".
FROM python:3.11-slim AS build

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ADR_COMPILED_DIR=/opt/adr/mypyc

RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY adr_cli ./adr_cli
COPY consumer ./consumer
COPY engine ./engine
COPY evaluation ./evaluation
COPY runtime ./runtime
COPY loadgen ./loadgen
COPY leaderboard ./leaderboard
COPY schemas ./schemas
COPY stack ./stack
COPY tierjob ./tierjob
# The versions the tests ran with (constraints.txt); mypy only for the build, removed after it.
RUN python -m venv /opt/adr \
    && /opt/adr/bin/pip install -c constraints.txt . mypy \
    && cd / \
    && /opt/adr/bin/python -m runtime.compiled build \
    && /opt/adr/bin/python -m runtime.compiled status \
    && /opt/adr/bin/pip uninstall -y mypy

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ADR_COMPILED_DIR=/opt/adr/mypyc \
    PATH=/opt/adr/bin:$PATH

COPY --from=build /opt/adr /opt/adr

RUN useradd --system --uid 10001 --no-create-home adr
USER 10001:10001
WORKDIR /
# Metrics ports: adr consume 9108, adr calibrate --every 9109.
EXPOSE 9108 9109
ENTRYPOINT ["adr"]
CMD ["--help"]
