"""`adr check` on the shared vectors (hex lines, raw files), on a real topic, and on the dead
letters a real `adr consume` wrote (their reason headers printed beside the verdict)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
from confluent_kafka import Producer
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_cli.check import Sample, verdict
from schemas import Limits
from tests.consumer.consumer_support import consume_cmd, read_topic, start_process

REPO = Path(__file__).resolve().parents[2]
DOC = json.loads((REPO / "schemas" / "vectors" / "kill_event.v1.json").read_text())
NOW = str(DOC["now_ms"])
# A blank line is skipped in --hex input, so the empty record is checked as a raw file instead.
HEX_VECTORS = [v for v in DOC["vectors"] if v["hex"]]


def _adr_check(*args: str, stdin: bytes = b"") -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [sys.executable, "-m", "adr_cli", "check", *args],
        input=stdin, capture_output=True, timeout=120, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    lines = [json.loads(x) for x in done.stdout.decode().splitlines()]
    return done.returncode, lines, done.stderr.decode()


def test_hex_lines_get_each_vector_its_verdict_reason_and_content() -> None:
    text = "# the shared vectors\n\n" + "\n".join(v["hex"] for v in HEX_VECTORS) + "\n"
    rc, lines, err = _adr_check("--hex", "--now-ms", NOW, stdin=text.encode())
    assert rc == 1, err
    assert len(lines) == len(HEX_VECTORS)
    for vector, line in zip(HEX_VECTORS, lines, strict=True):
        assert (line["verdict"], line["reason"]) == (vector["verdict"], vector["reason"]), vector
        assert line["content"] == vector["meaning"]
        assert (line["detail"] is None) == (vector["verdict"] == "valid")
    assert line["line"] == len(HEX_VECTORS) + 2
    assert json.loads(err.splitlines()[-1])["invalid"] == sum(
        v["verdict"] == "invalid" for v in HEX_VECTORS
    )


def test_only_valid_messages_exit_zero_and_the_window_follows_the_flags() -> None:
    valid = "\n".join(v["hex"] for v in HEX_VECTORS if v["verdict"] == "valid")
    rc, lines, err = _adr_check("--hex", "--now-ms", NOW, stdin=valid.encode())
    assert rc == 0, err
    assert {x["verdict"] for x in lines} == {"valid"}
    # Eight days later, the same events are too old for the default window (the oldest is then
    # 15 days old), not for a 16-day one.
    later = str(DOC["now_ms"] + 8 * 86_400_000)
    rc, lines, _ = _adr_check("--hex", "--now-ms", later, stdin=valid.encode())
    assert rc == 1 and {x["reason"] for x in lines} == {"ts_out_of_range"}
    rc, _, _ = _adr_check(
        "--hex", "--now-ms", later, "--max-age-s", str(16 * 86_400), stdin=valid.encode()
    )
    assert rc == 0


def test_raw_files_and_raw_stdin_are_one_message_each(tmp_path: Path) -> None:
    by_name = {v["name"]: v for v in DOC["vectors"]}
    paths = []
    for name in ("valid/basic", "invalid/empty", "invalid/struct-as-array"):
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(bytes.fromhex(by_name[name]["hex"]))
        paths.append(str(path))
    rc, lines, _ = _adr_check("--now-ms", NOW, *paths)
    assert rc == 1
    assert [(x["file"], x["reason"]) for x in lines] == [
        (paths[0], None), (paths[1], "undecodable"), (paths[2], "not_a_map")
    ]  # fmt: skip
    rc, lines, _ = _adr_check("--now-ms", NOW, stdin=bytes.fromhex(by_name["valid/basic"]["hex"]))
    assert rc == 0 and lines[0]["file"] == "-"


_ANY_MSGPACK = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text()
    | st.binary(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | _ANY_MSGPACK.map(msgpack.packb))
def test_any_bytes_get_a_verdict_and_a_strict_json_line(raw: bytes) -> None:
    line = verdict(Sample(raw, {"file": "-"}), int(NOW), Limits())
    assert line["verdict"] in ("valid", "invalid")
    assert (line["reason"] is None) == (line["verdict"] == "valid")
    json.loads(json.dumps(line, allow_nan=False))


def test_usage_and_unreadable_inputs_have_their_exit_status(tmp_path: Path) -> None:
    assert _adr_check("--hex", stdin=b"not hex\n")[0] == 2
    assert _adr_check(str(tmp_path / "missing.bin"))[0] == 3
    assert _adr_check("--topic", "t", "--hex")[0] == 2
    assert _adr_check("--topic", "t", "--count", "0")[0] == 2


def test_a_topic_sample_is_judged_with_key_and_headers(
    kafka_bootstrap: str, kafka_admin: Any, unique_name: Callable[..., str]
) -> None:
    topic = kafka_admin.create(unique_name("check"), partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i, v in enumerate(HEX_VECTORS):
        producer.produce(topic, key=f"arena-{i % 3}".encode(), value=bytes.fromhex(v["hex"]),
                         headers=[("origin", b"test")])  # fmt: skip
    assert producer.flush(30) == 0
    rc, lines, err = _adr_check("--topic", topic, "--count", "1000", "--now-ms", NOW,
                                "--bootstrap-servers", kafka_bootstrap)  # fmt: skip
    assert rc == 1, err
    want = Counter((json.dumps(v["meaning"]), v["reason"]) for v in HEX_VECTORS)
    assert Counter((json.dumps(x["content"]), x["reason"]) for x in lines) == want
    assert all(x["topic"] == topic and x["headers"] == {"origin": "test"} for x in lines)
    assert {x["key"] for x in lines} == {"arena-0", "arena-1", "arena-2"}
    # --start latest: each partition's newest --count messages only.
    rc, lines, err = _adr_check("--topic", topic, "--count", "1", "--start", "latest",
                                "--bootstrap-servers", kafka_bootstrap)  # fmt: skip
    assert len(lines) == 1, err
    rc, _, err = _adr_check("--topic", unique_name("absent"), "--bootstrap-servers",
                            kafka_bootstrap, "--timeout-s", "5")  # fmt: skip
    assert rc == 3, err


def test_dead_letters_are_shown_with_the_consumers_reason_headers(
    kafka_bootstrap: str,
    redis_url: str,
    kafka_admin: Any,
    unique_name: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = kafka_admin.create(unique_name("kill-events"), partitions=1)
    now = time.time_ns() // 1_000_000
    good = {"v": 1, "id": "c-1", "arena": "a", "attacker": "p1", "victim": "p2", "ts": now}
    bad = {
        "self_kill": {**good, "victim": "p1"},
        "wrong_type": {**good, "ts": float(now)},
        "not_a_map": list(good.values()),
        "missing_field": {k.capitalize(): v for k, v in good.items()},
    }
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b"a", value=msgpack.packb(good))
    for value in bad.values():
        producer.produce(topic, key=b"a", value=msgpack.packb(value))
    assert producer.flush(30) == 0
    cmd = consume_cmd(kafka_bootstrap, redis_url, unique_name("ns"), topic, unique_name("g"))
    proc = start_process(cmd, str(tmp_path / "consume.log"))
    try:
        got = read_topic(kafka_bootstrap, f"{topic}-dlq", expect=len(bad), timeout=90)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert len(got) == len(bad), (tmp_path / "consume.log").read_text()[-3000:]
    rc, lines, err = _adr_check("--topic", f"{topic}-dlq", "--count", "100",
                                "--bootstrap-servers", kafka_bootstrap)  # fmt: skip
    assert rc == 1, err
    assert sorted(x["headers"]["reason"] for x in lines) == sorted(bad)
    for x in lines:
        assert x["reason"] == x["headers"]["reason"]
        assert x["headers"]["source_topic"] == topic
        assert x["headers"]["source_partition"] == "0"
        assert int(x["headers"]["source_offset"]) >= 1


def test_the_default_window_is_the_consumers_and_the_help_says_so() -> None:
    """One source for both: `adr check`'s defaults are the consumer's config defaults, and its
    --help prints them (it once said 3600 s while the consumer kept 7 days)."""
    import argparse

    from adr_cli.check import add_arguments
    from consumer import Config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([])
    consumer = Config()
    assert round(args.max_age_s * 1000) == consumer.max_age_ms
    assert round(args.max_future_s * 1000) == consumer.max_future_ms
    text = parser.format_help()
    assert f"{consumer.max_age_ms // 1000} = 7 days" in " ".join(text.split())
    assert "3600" not in text


def test_an_event_stamped_now_passes_without_now_ms() -> None:
    """What a publisher pipes in today (ts from the current clock) is valid with the defaults;
    the same bytes 8 days old are not."""
    now = time.time_ns() // 1_000_000
    event = {"v": 1, "id": "e1", "arena": "arena-3", "attacker": "p17", "victim": "p4"}
    fresh = msgpack.packb({**event, "ts": now}).hex()
    stale = msgpack.packb({**event, "ts": now - 8 * 86_400_000}).hex()
    rc, lines, err = _adr_check("--hex", stdin=f"{fresh}\n".encode())
    assert rc == 0 and lines[0]["verdict"] == "valid", err
    rc, lines, _ = _adr_check("--hex", stdin=f"{stale}\n".encode())
    assert rc == 1 and lines[0]["reason"] == "ts_out_of_range"


def test_empty_input_is_not_a_pass() -> None:
    """An encoder that printed nothing (or only comments) gets exit 4, not 0."""
    for text in (b"", b"\n\n", b"# nothing\n"):
        rc, lines, err = _adr_check("--hex", stdin=text)
        assert (rc, lines) == (4, []), err
        assert "nothing to check" in err


def test_the_documented_vector_check_passes_every_valid_vector() -> None:
    """docs/game-servers.md's line for a vector's bytes, run as written on the vectors' valid
    hex: exit 0 (without --now-ms their 2025 times are out of today's window)."""
    doc = (REPO / "docs" / "game-servers.md").read_text()
    match = re.search(r"^(adr check --hex --now-ms (\d+))\s", doc, re.M)
    assert match is not None, "docs/game-servers.md: no `adr check --hex --now-ms` line"
    assert match.group(2) == NOW
    valid = "\n".join(v["hex"] for v in HEX_VECTORS if v["verdict"] == "valid") + "\n"
    rc, lines, err = _adr_check(*match.group(1).split()[2:], stdin=valid.encode())
    assert rc == 0, err
    assert len(lines) == sum(v["verdict"] == "valid" for v in HEX_VECTORS)
