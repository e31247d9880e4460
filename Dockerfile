# adr-stream image: the `adr` CLI (consume, calibrate, leaderboard, simulate, ...).
# Used by docker-compose.yml and deploy/k8s. Build: docker build -t adr-stream:0.1.0 .
#
# Two stages: the first builds the wheel and installs it into a virtual environment; building it
# compiles the engine and the consumer's hot path with mypyc (setup.py, runtime/compiled.py;
# about twice the throughput of the pure modules, which stay the reference), and the stage fails
# unless `python -m runtime.compiled status` says "compiled". The second copies that environment,
# without the compiler.
FROM python:3.11-slim AS build

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
COPY evaluation ./evaluation
COPY runtime ./runtime
COPY loadgen ./loadgen
COPY leaderboard ./leaderboard
COPY redis_layout ./redis_layout
COPY schemas ./schemas
COPY serve ./serve
COPY stack ./stack
COPY tierjob ./tierjob
# The versions the tests ran with (constraints.txt; pyproject's [build-system] pins mypy, which
# pip installs only into the isolated build environment). `status` from / : not the sources.
RUN python -m venv /opt/adr \
    && /opt/adr/bin/pip install -c constraints.txt . \
    && cd / \
    && /opt/adr/bin/python -m runtime.compiled status

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/adr/bin:$PATH

COPY --from=build /opt/adr /opt/adr

RUN useradd --system --uid 10001 --no-create-home adr
USER 10001:10001
WORKDIR /
# Metrics ports: adr consume 9108, adr calibrate --every 9109.
EXPOSE 9108 9109
ENTRYPOINT ["adr"]
CMD ["--help"]
