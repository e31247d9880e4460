"""`adr replay` applies the consumer's event-id rule (schemas/kill_event.md, "Meaning checks"): a
resend of a counted kill is a duplicate even after the pair's cooldown has moved on, a reused id
is rejected, and an id is forgotten at the consumer's horizon."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adr_cli.main import main
from engine import COUNTED, Params, RatingBook

T0 = 1_700_000_000_000
MINUTE = 60_000


def _kill(event_id: str, attacker: str, victim: str, ts: int) -> dict[str, object]:
    return {"id": event_id, "arena": "r1", "attacker": attacker, "victim": victim, "ts": ts}


def _replay(tmp_path: Path, events: list[dict[str, object]], *flags: str) -> dict[str, object]:
    src = tmp_path / "events.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = tmp_path / "out"
    assert main(["replay", str(src), "--out-dir", str(out), *flags]) == 0
    players = [json.loads(line) for line in (out / "players.jsonl").read_text().splitlines()]
    population = json.loads((out / "population.json").read_text())
    return {**population, "players": players}


def _book(events: list[dict[str, object]], lateness_ms: int = 3_600_000) -> RatingBook:
    book = RatingBook(Params(), lateness_ms=lateness_ms)
    for e in events:
        book.apply(str(e["id"]), str(e["attacker"]), str(e["victim"]), int(e["ts"]))  # type: ignore[call-overload]
    return book


def _mus(result: dict[str, object]) -> dict[str, float]:
    return {str(p["player"]): float(p["mu"]) for p in result["players"]}  # type: ignore[attr-defined]


def test_a_resend_after_the_cooldown_moved_on_is_a_duplicate(tmp_path: Path) -> None:
    first, later = _kill("e1", "p1", "p2", T0), _kill("e2", "p1", "p2", T0 + 2 * MINUTE)
    resend = dict(first)  # the cooldown alone (last counted p1->p2: 2 minutes away) counts it
    assert _book([first, later, resend]).counted == 3
    result = _replay(tmp_path, [first, later, resend])
    book = _book([first, later])
    assert _mus(result) == {p: s.mu for p, s in book.players().items()}
    assert (result["counted"], result["duplicates"]) == (2, 1)


def test_a_reused_id_is_rejected_and_the_first_use_stands(tmp_path: Path) -> None:
    first, other = _kill("e1", "p1", "p2", T0), _kill("e1", "p3", "p4", T0 + 10_000)
    result = _replay(tmp_path, [first, other])
    assert _mus(result) == {p: s.mu for p, s in _book([first]).players().items()}
    assert result["counted"] == 1 and result["rejected_by_reason"]["id_reused"] == 1  # type: ignore[index]


def test_an_id_is_forgotten_at_the_horizon(tmp_path: Path) -> None:
    """lateness 0 and t_cooldown 60 s: an id counted at t is remembered until the watermark less
    60 s reaches the end of t's 10-second bucket of the consumer's record index (deleted once
    that end <= watermark - keep); then another kill may use it."""
    t = T0 - T0 % 10_000 + 3_000  # 3 s into a bucket, which ends at t + 6.999 s
    events = [
        _kill("e1", "p1", "p2", t),
        _kill("e2", "p3", "p4", t + MINUTE + 6_998),  # watermark - keep: 1 ms before the end
        _kill("e1", "p5", "p6", t + MINUTE + 6_998),  # still remembered: id_reused
        _kill("e3", "p9", "p10", t + MINUTE + 6_999),  # at the end: forgotten
        _kill("e1", "p7", "p8", t + MINUTE + 6_999),
    ]
    result = _replay(tmp_path, events, "--lateness", "0")
    assert result["counted"] == 4 and result["rejected_by_reason"]["id_reused"] == 1  # type: ignore[index]
    assert "p5" not in _mus(result) and "p7" in _mus(result)


_FIXTURE_OK = [HealthCheck.function_scoped_fixture]  # tmp_path: each example overwrites it


@settings(max_examples=25, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(seed=st.integers(0, 2**32 - 1), resends=st.integers(1, 40))
def test_resending_counted_kills_changes_no_state(tmp_path: Path, seed: int, resends: int) -> None:
    """Any counted kill sent again, anywhere later in the log, is a duplicate or late: the
    ratings are those of the log without the resends."""
    rng = random.Random(seed)
    base: list[dict[str, object]] = []
    ts = T0
    for i in range(300):
        ts += rng.choice([0, 1_000, 30_000, 90_000, 600_000])
        a, b = rng.sample(range(12), 2)
        base.append(_kill(f"e{i}", f"p{a}", f"p{b}", ts))
    book = RatingBook(Params())
    counted = [
        i for i, e in enumerate(base)
        if book.apply(str(e["id"]), str(e["attacker"]), str(e["victim"]), int(e["ts"])) is COUNTED  # type: ignore[call-overload]
    ]  # fmt: skip
    log = list(base)
    for _ in range(resends):
        original = rng.choice(counted)
        at = rng.randint(log.index(base[original]) + 1, len(log))
        log.insert(at, dict(base[original]))
    result = _replay(tmp_path, log)
    assert _mus(result) == {p: s.mu for p, s in book.players().items()}
    assert result["counted"] == book.counted
    extra = int(result["duplicates"]) + int(result["rejected"]) - book.duplicates - book.rejected  # type: ignore[call-overload]
    assert extra == resends
