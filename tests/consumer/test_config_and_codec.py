"""Configuration precedence (flag > environment > default) and the player-hash codec."""

from __future__ import annotations

import argparse
import logging
import math
import random

import msgspec
import pytest
from confluent_kafka import KafkaException
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer import Config, ConsumerError
from consumer._kafka import new_consumer
from consumer._redis_codec import (
    FIELDS,
    decode_player,
    encode_player,
    float_text,
    msgpack_str,
    player_values,
    script_values,
)
from consumer.config import add_arguments, from_args
from engine import TIER_LABELS, Params, PlayerState, new_player, tier_label
from redis_layout import Keys


def _parse(argv: list[str], env: dict[str, str]) -> Config:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_args(parser.parse_args(argv), env)


def test_flags_win_over_environment_over_defaults() -> None:
    env = {"REDIS_URL": "redis://r:1/0", "ADR_NAMESPACE": "envns", "ADR_BATCH_SIZE": "7"}
    config = _parse(["--namespace", "flagns", "--param", "c_loss=0.5"], env)
    assert config.redis_url == "redis://r:1/0"
    assert config.namespace == "flagns"
    assert config.batch_size == 7
    assert config.topic == "kill-events" and config.dlq_topic == "kill-events-dlq"
    assert config.params == {"c_loss": "0.5"}
    assert Params.from_overrides(dict(config.params)).c_loss == 0.5


def test_a_profile_from_the_environment_or_the_flag_under_the_params() -> None:
    env = {"ADR_PROFILE": "recommended", "ADR_PARAMS": "theta=150"}
    params = Params.from_overrides(dict(_parse([], env).params))
    assert (params.repeat_window, params.decay_grace, params.theta) == (600.0, 7.0, 150.0)
    config = _parse(["--profile", "paper"], env)  # the flag names the profile
    assert config.params == {"theta": "150"}
    with pytest.raises(ConsumerError):
        _parse([], {"ADR_PROFILE": "nope"})


def test_bad_configuration_is_a_consumer_error() -> None:
    with pytest.raises(ConsumerError):
        _parse([], {"ADR_BATCH_SIZE": "many"})
    with pytest.raises(ConsumerError):
        _parse(["--param", "c_loss"], {})
    with pytest.raises(ConsumerError):
        Config(namespace="a}b")


def test_kafka_debug_reaches_librdkafka_and_its_lines_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """librdkafka checks the contexts itself: a bad one fails at client creation, a good one
    produces debug lines through the consumer's Kafka logger (no broker needed for them)."""
    with pytest.raises(KafkaException):
        new_consumer(_parse(["--kafka-debug", "no-such-context"], {}), lambda _err: None)
    config = _parse([], {"ADR_KAFKA_DEBUG": "generic", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert config.kafka_debug == "generic"
    kafka_log = logging.getLogger("adr.consumer.kafka")
    kafka_log.setLevel(logging.NOTSET)
    caplog.set_level(logging.INFO)  # the root level `adr consume` runs at
    caplog.handler.setLevel(logging.NOTSET)  # so only the logger's own level can drop a line
    try:
        consumer = new_consumer(config, lambda _err: None)
        consumer.poll(0.2)
        consumer.close()
    finally:
        kafka_log.setLevel(logging.NOTSET)
    debug_lines = [r for r in caplog.records if r.name == "adr.consumer.kafka"]
    assert any(r.levelno == logging.DEBUG for r in debug_lines)


def test_keys_share_the_namespace_hash_tag() -> None:
    keys = Keys("pool1")
    assert keys.player("p") == "{pool1}:player:p"
    assert keys.lb == "{pool1}:lb" and keys.pop == "{pool1}:pop"
    assert keys.offsets("kill-events") == "{pool1}:offsets:kill-events"
    # the attacker's length keeps ("ab", "c") and ("a", "bc") apart
    assert keys.cooldown("ab", "c") != keys.cooldown("a", "bc")


_floats = st.floats(allow_nan=False, allow_infinity=False)


_states = st.builds(
    PlayerState,
    mu=_floats, sigma=_floats, phi=_floats, pool=_floats, h_up=_floats, h_down=_floats,
    streak=st.integers(0, 10**6), n=st.integers(0, 10**9),
    last_ts=st.none() | st.integers(0, 2**62), tier=st.integers(0, len(TIER_LABELS)),
    window=st.lists(_floats, max_size=20).map(tuple),
    recent=st.lists(st.integers(0, 2**62), max_size=5).map(tuple),
)  # fmt: skip


@given(state=_states, ver=st.integers(0, 2**62))
def test_a_player_state_round_trips_through_its_hash_bit_for_bit(
    state: PlayerState, ver: int
) -> None:
    flat = encode_player(state, ver)
    as_redis = dict(zip(flat[0::2], flat[1::2], strict=True))
    values = [v if isinstance(v, bytes) else v.encode() for v in (as_redis[k] for k in FIELDS)]
    back, back_ver = decode_player(values)  # type: ignore[misc]
    assert back == state and back_ver == ver
    assert repr(back) == repr(state)  # bit for bit, -0.0 included


_UNPACK = "return cmsgpack.unpack(ARGV[1])"


# The client is only used for stateless EVALs, so sharing it across examples is fine.
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(state=_states)
def test_the_write_script_reads_the_same_hash_values_from_its_msgpack_section(
    redis_client, state: PlayerState
) -> None:  # type: ignore[no-untyped-def]
    """What Redis's own cmsgpack makes of `script_values` is, byte for byte, what HSET of
    `player_values` stores (window and recent travel as msgpack str, not bin)."""
    read = redis_client.eval(_UNPACK, 0, msgspec.msgpack.encode(script_values(state)))
    want = [v if isinstance(v, bytes) else v.encode() for v in player_values(state)]
    assert read == want


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65_535, 65_536])
def test_msgpack_str_of_any_length_reads_back_in_redis_byte_for_byte(
    redis_client, size: int
) -> None:  # type: ignore[no-untyped-def]
    data = random.Random(size).randbytes(size)
    read = redis_client.eval(_UNPACK, 0, msgspec.msgpack.encode([msgpack_str(data), "x"]))
    assert read == [data, b"x"]


@given(x=st.floats(allow_nan=True, allow_infinity=True))
def test_float_text_is_repr(x: float) -> None:
    assert float_text(x) == repr(x)


@pytest.mark.parametrize(
    "x",
    [0.0, -0.0, 1e-4, -1e-4, math.nextafter(1e-4, 0.0), 1e16, math.nextafter(1e16, 0.0), 5e-324,
     1.7976931348623157e308, 0.1, 1 / 3, 1000.0, 1234.5678, -0.25],
)  # fmt: skip
def test_float_text_is_repr_at_the_edges_of_its_fast_range(x: float) -> None:
    assert float_text(x) == repr(x)


def test_hash_fields_are_what_other_services_read() -> None:
    state = new_player(Params())
    as_redis = dict(zip(*[iter(encode_player(state, 1))] * 2, strict=True))
    assert set(as_redis) == set(FIELDS)
    assert as_redis["mu"] == "1000.0" and as_redis["tier"] == "" and as_redis["last_ts"] == ""
    assert msgspec.msgpack.decode(as_redis["window"]) == []
    assert tier_label(1) == "1H" and tier_label(15) == "5L" and tier_label(0) == ""
    assert decode_player([None] * len(FIELDS)) is None
