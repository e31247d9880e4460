"""`adr consume`: flags and entry point (see consumer.pipeline for the work)."""

from __future__ import annotations

import argparse
import logging

from consumer._errors import ConsumerError
from consumer.config import add_arguments, from_args, pool_model
from engine import ParamError, Params
from redis_layout import ModelMismatch
from runtime import ProbeServerError, RuntimeConfigError, redact_text
from runtime import logs as _log

__all__ = ["add_arguments", "run"]  # what adr_cli.main calls

EXIT_CONFIG = 2
log = logging.getLogger("adr.consumer")


def run(args: argparse.Namespace) -> int:
    _log.setup()
    try:
        config = from_args(args)
        params = Params.from_overrides(dict(config.params))
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
    except ProbeServerError as exc:  # raised before the pipeline subscribes: nothing to undo
        log.error("cannot serve metrics", extra={"error": str(exc)})
        pipeline.kafka.close()
        pipeline.redis.close()
        return EXIT_CONFIG
    except ModelMismatch as exc:  # raised before the pipeline subscribes: nothing consumed
        log.error("the pool runs another model", extra={"error": str(exc)})
        pipeline.kafka.close()
        pipeline.redis.close()
        return EXIT_CONFIG
    return 0
