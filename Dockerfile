# adr-stream image: the `adr` CLI (consume, calibrate, leaderboard, simulate, ...).
# Used by docker-compose.yml and deploy/k8s. Build: docker build -t adr-stream:0.1.0 .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY adr_cli ./adr_cli
COPY consumer ./consumer
COPY engine ./engine
COPY evaluation ./evaluation
COPY schemas ./schemas
COPY stack ./stack
COPY tierjob ./tierjob
# confluent-kafka, hiredis and msgspec ship manylinux wheels: no compiler needed.
RUN pip install . && rm -rf /src

RUN useradd --system --uid 10001 --no-create-home adr
USER 10001:10001
WORKDIR /
# Metrics ports: adr consume 9108, adr calibrate --every 9109.
EXPOSE 9108 9109
ENTRYPOINT ["adr"]
CMD ["--help"]
