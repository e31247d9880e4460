"""`adr consume`: flags and entry point (see consumer.pipeline for the work)."""

from __future__ import annotations

import argparse
import logging

from consumer._errors import ConsumerError, KafkaUnrecoverable
from consumer.config import add_arguments, from_args, pool_model
from engine import ParamError, Params
from redis_layout import ModelMismatch
from runtime import ProbeServerError, RuntimeConfigError, redact_text
from runtime import logs as _log

__all__ = ["add_arguments", "run"]  # what adr_cli.main calls

EXIT_CONFIG = 2
EXIT_KAFKA = 3
"""Kafka refuses what neither waiting nor new clients can change (an unsupported broker
version, an invalid setting: consumer/_kafka_faults.py's Action.EXIT). Every other Kafka refusal
(ACLs, missing topics, brokers down, fencing) is waited on or recovered from, never an exit."""
log = logging.getLogger("adr.consumer")


def refuse_offline_only(params: Params) -> None:
    """Raise ParamError for parameters the engine runs offline only: `pair_decay` needs each
    pair's leaky load, which the consumer does not keep in Redis (it would fail at the first
    counted kill, and a restart would fail again: a crash loop instead of a clear refusal).
    Params.refuse_pair_decay, the one check of it, whatever the model; `adr rebuild` calls this
    too: a pool it wrote with them no consumer could continue."""
    params.refuse_pair_decay(
        "the consumer (pair_decay runs offline only: no pair load in Redis; adr rebuild "
        "writes pools the consumer continues)"
    )


def run(args: argparse.Namespace) -> int:
    _log.setup()
    try:
        config = from_args(args)
        params = Params.from_overrides(dict(config.params))
        refuse_offline_only(params)
        model = pool_model(config, params)
    except (ConsumerError, ParamError) as exc:
        log.error("bad configuration", extra={"error": str(exc)})
        return EXIT_CONFIG
    from confluent_kafka import KafkaException

    from consumer.pipeline import Pipeline  # imports the Kafka client only when running

    try:
        pipeline = Pipeline(config, params, model=model)
    except (KafkaException, RuntimeConfigError) as exc:  # librdkafka refused a setting
        log.error("bad Kafka configuration", extra={"error": redact_text(str(exc))})
        return EXIT_CONFIG
    try:
        pipeline.run()
    except KafkaUnrecoverable as exc:
        log.error(
            "kafka refuses what this process cannot change, exiting",
            extra={"topic": exc.topic, "cause": exc.fault.cause.value, "code": exc.fault.code,
                   "error": redact_text(exc.fault.error), "exit_code": EXIT_KAFKA},
        )  # fmt: skip
        return EXIT_KAFKA
    except ProbeServerError as exc:  # raised before the pipeline subscribes: nothing to undo
        log.error("cannot serve metrics", extra={"error": str(exc)})
        pipeline.kafka.close()
        pipeline.redis.close()
        return EXIT_CONFIG
    except ModelMismatch as exc:  # raised before the pipeline subscribes: nothing consumed
        log.error(exc.what, extra={"error": str(exc)})
        pipeline.kafka.close()
        pipeline.redis.close()
        return EXIT_CONFIG
    return 0
