"""`adr topics`: the four topics created as documented, and every mismatch reported, against a
real broker; `problems` checked on hand-made states."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from adr_cli.topics import TopicState, add_arguments, problems, specs


def _specs(*argv: str) -> dict[str, object]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return {s.role: s for s in specs(parser.parse_args(["check", *argv]))}


def test_the_documented_topic_settings() -> None:
    by_role = _specs()
    kill = by_role["kill-events"]
    assert (kill.partitions, kill.replication) == (12, 3)
    assert kill.config["min.insync.replicas"] == "2"
    assert kill.config["retention.ms"] == "-1"
    assert by_role["tier-boundaries"].config["cleanup.policy"] == "compact"
    assert by_role["tier-boundaries"].partitions == 1
    dlq = by_role["kill-events-dlq"].config
    assert dlq["retention.ms"] == str(30 * 86_400_000)
    assert int(dlq["max.message.bytes"]) == int(kill.config["max.message.bytes"]) + 65536
    assert _specs("--replication-factor", "1")["kill-events"].config["min.insync.replicas"] == "1"


def test_problems_names_each_shortfall() -> None:
    kill = _specs()["kill-events"]
    good = TopicState(12, 3, dict(kill.config))
    assert problems(kill, good, consumer_replicas=12) == []
    assert problems(kill, None, 1) == ["kill-events: missing (run `adr topics create`)"]
    few = TopicState(4, 1, {**kill.config, "retention.ms": "604800000"})
    found = problems(kill, few, consumer_replicas=6)
    assert any("4 partitions, expected 12" in p for p in found)
    assert any(
        "4 partitions for 6 consumer replicas: 2 replicas would sit idle" in p for p in found
    )
    assert any("replication factor 1, expected 3" in p for p in found)
    assert any("retention.ms=604800000, expected -1" in p for p in found)
    tier = _specs()["tier-boundaries"]
    assert problems(tier, TopicState(1, 3, {**tier.config, "cleanup.policy": "delete"}), 1) == [
        "tier-boundaries: cleanup.policy=delete, expected compact"
    ]


def _adr_topics(
    bootstrap: str, action: str, names: dict[str, str], *extra: str, rf: str | None = "1"
):
    replication = [] if rf is None else ["--replication-factor", rf]
    argv = [sys.executable, "-m", "adr_cli.main", "topics", action, "--bootstrap-servers",
            bootstrap, *replication, "--partitions", "3",
            "--kill-topic", names["kill"], "--rating-topic", names["rating"],
            "--tier-topic", names["tier"], "--dlq-topic", names["dlq"], *extra]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_create_then_check_on_a_real_broker(kafka_bootstrap: str, unique_name) -> None:
    names = {role: unique_name(role) for role in ("kill", "rating", "tier", "dlq")}
    code, lines, err = _adr_topics(kafka_bootstrap, "check", names)
    assert code == 1, err
    assert [line["status"] for line in lines] == ["missing"] * 4

    code, lines, err = _adr_topics(kafka_bootstrap, "create", names)
    assert code == 0, (lines, err)
    assert [line["status"] for line in lines] == ["created"] * 4
    assert [line["partitions"] for line in lines] == [3, 3, 1, 1]

    code, lines, _ = _adr_topics(kafka_bootstrap, "check", names)
    assert code == 0 and all(line["status"] == "ok" for line in lines)

    code, lines, _ = _adr_topics(kafka_bootstrap, "check", names, "--consumer-replicas", "5")
    assert code == 1
    assert lines[0]["status"] == "mismatch"
    assert "3 partitions for 5 consumer replicas" in lines[0]["problems"][0]


def test_a_hand_made_topic_with_the_wrong_settings_is_reported(
    kafka_bootstrap: str, kafka_admin, unique_name
) -> None:
    names = {role: unique_name(role) for role in ("kill", "rating", "tier", "dlq")}
    kafka_admin.create(names["tier"], partitions=2)  # not compacted, two partitions
    code, lines, _ = _adr_topics(kafka_bootstrap, "create", names)
    assert code == 1
    tier = next(line for line in lines if line["role"] == "tier-boundaries")
    assert tier["status"] == "mismatch"
    assert any("cleanup.policy=delete, expected compact" in p for p in tier["problems"])
    assert any("2 partitions, expected 1" in p for p in tier["problems"])


@pytest.mark.integration  # waits for the client to give up on an absent broker
def test_no_broker_is_exit_3() -> None:
    names = {role: role for role in ("kill", "rating", "tier", "dlq")}
    code, _, err = _adr_topics(
        "127.0.0.1:1",
        "check",
        names,
        "--kafka-config",
        "socket.timeout.ms=2000",
        "--timeout-s",
        "3",
    )
    assert code == 3, err


def _json_lines(text: str) -> list[dict[str, object]]:
    """Every line parsed as JSON: a raw librdkafka line (`%3|...|FAIL|...`) fails here."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_default_replication_fits_a_one_broker_cluster(
    kafka_bootstrap: str, kafka_admin, unique_name
) -> None:
    """The README's local stack has one broker: `adr topics create` with its default (3)
    creates the topics with 1 replica and says so in a JSON warning; check then passes."""
    brokers = len(kafka_admin.client.list_topics(timeout=10).brokers)
    if brokers != 1:
        pytest.skip(f"the test broker has {brokers} brokers")
    names = {role: unique_name(role) for role in ("kill", "rating", "tier", "dlq")}
    code, lines, err = _adr_topics(kafka_bootstrap, "create", names, rf=None)
    assert code == 0, (lines, err)
    assert [line["replication"] for line in lines] == [1, 1, 1, 1]
    warnings = [x for x in _json_lines(err) if x["msg"].startswith("replication factor capped")]
    assert len(warnings) == 1
    assert (warnings[0]["replication_factor"], warnings[0]["brokers"]) == (3, 1)
    code, lines, err = _adr_topics(kafka_bootstrap, "check", names, rf=None)
    assert code == 0 and {line["status"] for line in lines} == {"ok"}, err
    # An explicit factor is capped the same way: creating with 3 on one broker would fail.
    code, _, err = _adr_topics(kafka_bootstrap, "check", names, rf="5")
    assert code == 0, err


@pytest.mark.integration  # waits for the client to give up on an absent broker
def test_librdkafkas_own_lines_are_json_log_lines() -> None:
    """With no broker, librdkafka reports refused connections; they reach stderr as JSON log
    lines (logger adr.topics.kafka), never as its raw `%3|...` text; stdout stays empty."""
    names = {role: role for role in ("kill", "rating", "tier", "dlq")}
    argv = [sys.executable, "-m", "adr_cli.main", "topics", "check", "--bootstrap-servers",
            "127.0.0.1:1", "--kafka-config", "socket.timeout.ms=2000", "--timeout-s", "3",
            "--log-level", "debug", *(f"--{r}-topic={n}" for r, n in names.items())]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    message = [x for x in lines if x.startswith("adr topics: no broker answered")]
    assert len(message) == 1, done.stderr
    logged = _json_lines("\n".join(x for x in lines if x not in message))
    assert any(
        x["logger"] == "adr.topics.kafka" and "Connect to" in str(x["msg"]) for x in logged
    ), done.stderr
