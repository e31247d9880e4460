"""`adr evaluate --events FILE`: reading and judging a log, the held-out metrics against hand
calculations, the day bootstrap, the harness under the consumer's counting rules, the
recommendation rule, and the command end to end on the committed sample log."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Params, model_named, profile_overrides
from evaluation._adr_system import AdrSystem
from evaluation._day_bootstrap import (
    HeldOut,
    auc_draws,
    brier_draws,
    day_multiplicities,
    ece_draws,
    log_loss_draws,
)
from evaluation._elo import Elo
from evaluation._event_log import LogEvent, read_log
from evaluation._log_harness import HarnessOptions, first_is_attacker, run_log
from evaluation._log_metrics import MIN_DAYS, BootstrapOptions, recommend, summarize
from evaluation._metrics import auc, calibration_curve, expected_calibration_error, log_loss
from evaluation._model_system import ModelSystem

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "events" / "sample.jsonl"
DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _held(p: list[float], y: list[float], day: list[int] | None = None) -> HeldOut:
    days = day or [0] * len(p)
    return HeldOut(np.array(p), np.array(y), np.array(days), max(days) + 1)


# -- the metrics, against hand calculations -------------------------------------------------


def test_metrics_on_four_kills_by_hand() -> None:
    # p = P(first kills second), y = first killed: (0.8, 1), (0.6, 0), (0.3, 1), (0.1, 0).
    h = _held([0.8, 0.6, 0.3, 0.1], [1, 0, 1, 0])
    m = day_multiplicities(1, 3, seed=1)
    # log loss = −(ln 0.8 + ln 0.4 + ln 0.3 + ln 0.9)/4
    #          = (0.2231435513 + 0.9162907319 + 1.2039728043 + 0.1053605157)/4 = 0.6121919008
    assert log_loss_draws(h, m)[0] == pytest.approx(0.6121919008, abs=1e-10)
    # AUC: positives {0.8, 0.3} against negatives {0.6, 0.1}: 0.8>0.6, 0.8>0.1, 0.3>0.1 → 3/4
    assert auc_draws(h, m)[0] == 0.75
    # Brier: (0.2² + 0.6² + 0.7² + 0.1²)/4 = (0.04 + 0.36 + 0.49 + 0.01)/4 = 0.225
    assert brier_draws(h, m)[0] == pytest.approx(0.225, abs=1e-15)
    # ECE: each kill alone in its bin: (0.2 + 0.6 + 0.7 + 0.1)/4 = 0.4
    assert ece_draws(h, m)[0] == pytest.approx(0.4, abs=1e-15)
    # one day only: every resample is that day, so every draw equals the point
    assert np.all(log_loss_draws(h, m)[1] == log_loss_draws(h, m)[0])


def test_auc_known_cases_and_ties() -> None:
    m = day_multiplicities(1, 2, seed=0)
    assert auc_draws(_held([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0]), m)[0] == 1.0  # perfect
    assert auc_draws(_held([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0]), m)[0] == 0.0  # reversed
    assert auc_draws(_held([0.5, 0.5, 0.5], [1, 0, 0]), m)[0] == 0.5  # all tied: ½ each
    # ties across days: positive 0.5 (day 0) against negatives 0.5 (day 1) and 0.2 (day 0)
    two_days = day_multiplicities(2, 2, seed=0)
    assert auc_draws(_held([0.5, 0.5, 0.2], [1, 0, 0], [0, 1, 0]), two_days)[0] == 0.75


def test_ece_pools_a_bin_before_taking_the_gap() -> None:
    # Two kills in bin [0.6, 0.7): mean predicted 0.65, observed 0.5 → gap 0.15, weight 2/3;
    # one kill at 0.05 won (bin [0, 0.1)): gap 0.95, weight 1/3. ECE = 0.1 + 0.3166… = 0.41666…
    h = _held([0.6, 0.7 - 1e-12, 0.05], [1, 0, 1])
    assert ece_draws(h, day_multiplicities(1, 1, 0))[0] == pytest.approx(1.25 / 3, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.integers(0, 1), st.integers(0, 5)),
        min_size=4,
        max_size=60,
    ),
    st.integers(0, 2**32 - 1),
)
def test_each_resample_is_the_metric_on_the_days_drawn(
    rows: list[tuple[float, int, int]], seed: int
) -> None:
    # The bootstrap computes every figure from per-day sums; each draw must equal the plain
    # metric (evaluation._metrics) on the drawn days' kills concatenated, a day drawn k times
    # counting k times.
    p = np.array([r[0] for r in rows])
    y = np.array([float(r[1]) for r in rows])
    day = np.array([r[2] for r in rows])
    h = HeldOut(p, y, day, 6)
    m = day_multiplicities(6, 5, seed)
    for b in range(5):
        idx = np.concatenate(
            [np.flatnonzero(day == d) for d in range(6) for _ in range(int(m[b, d]))]
        )
        if idx.size == 0:
            continue
        pb, yb = p[idx], y[idx]
        assert log_loss_draws(h, m)[1][b] == pytest.approx(log_loss(pb, yb), rel=1e-9)
        got_ece = ece_draws(h, m)[1][b]
        assert got_ece == pytest.approx(
            expected_calibration_error(calibration_curve(pb, yb)), abs=1e-9
        )
        if 0 < yb.sum() < yb.size and 0 < y.sum() < y.size:
            assert auc_draws(h, m)[1][b] == pytest.approx(auc(pb, yb), rel=1e-9)


def test_bootstrap_is_deterministic_with_a_seed() -> None:
    a = day_multiplicities(9, 50, seed=4)
    assert np.array_equal(a, day_multiplicities(9, 50, seed=4))
    assert not np.array_equal(a, day_multiplicities(9, 50, seed=5))
    assert np.all(a.sum(axis=1) == 9)  # each resample draws as many days as there are
    rng = np.random.default_rng(0)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(float)
    h = HeldOut(p, y, rng.integers(0, 9, 300), 9)
    once = log_loss_draws(h, a)[1]
    assert np.array_equal(once, log_loss_draws(h, day_multiplicities(9, 50, seed=4))[1])
    assert np.ptp(once) > 0  # nine different days: the draws differ


# -- reading the log ------------------------------------------------------------------------


def _rec(i: int, a: str = "p1", b: str = "p2", ts: int = T0, **extra: object) -> dict[str, object]:
    return {"id": f"e{i}", "arena": "x", "attacker": a, "victim": b, "ts": ts, **extra}


BAD = [
    (_rec(1, b="p1"), "self_kill"),
    ({"id": "e2", "arena": "x", "attacker": "p1", "ts": T0}, "missing_field"),
    (_rec(3, ts=-1), "ts_out_of_range"),
    (_rec(4, ts=2**53), "ts_out_of_range"),
    (_rec(5, a="a" * 65), "bad_id"),
    (_rec(6, ts="1000"), "wrong_type"),
    (_rec(7, v=2), "unknown_version"),
    (["e8", "x", "p1", "p2", T0], "not_a_map"),
    (_rec(9, a=""), "bad_id"),
]


def test_bad_records_are_counted_by_reason_jsonl(tmp_path: Path) -> None:
    good = [_rec(100 + k, ts=T0 + k) for k in range(3)]
    lines = [json.dumps(r) for r in good[:1]]
    lines += [json.dumps(r) for r, _ in BAD] + ["{not json", "", "   "]
    lines += [json.dumps(r) for r in good[1:]]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    reading = read_log(path)
    assert reading.fmt == "jsonl"
    expected = Counter(reason for _, reason in BAD) + Counter({"not_json": 1})
    assert reading.bad == expected
    assert [e.id for e in reading.events] == ["e100", "e101", "e102"]
    assert reading.records == 1 + len(BAD) + 1 + 2  # blank lines are not records
    assert reading.examples["not_json"][0].startswith(f"#{len(BAD) + 2}:")


def test_bad_records_are_counted_by_reason_msgpack_and_a_broken_tail(tmp_path: Path) -> None:
    data = msgpack.packb(_rec(100)) + b"".join(msgpack.packb(r) for r, _ in BAD)
    data += msgpack.packb(_rec(101, ts=T0 + 1)) + b"\xc1garbage"
    path = tmp_path / "log.msgpack"
    path.write_bytes(data)
    reading = read_log(path)
    assert reading.fmt == "msgpack"
    assert reading.bad == Counter(reason for _, reason in BAD) + Counter({"undecodable_tail": 1})
    assert [e.id for e in reading.events] == ["e100", "e101"]
    assert reading.unread_bytes == len(b"\xc1garbage")


# -- the harness ----------------------------------------------------------------------------


class _Spy(Elo):
    """Elo K 32 that records what it was fed (a unit-test double beside the real systems)."""

    def __init__(self) -> None:
        super().__init__(k=32.0, name="spy")
        self.fed: list[tuple[str, str, int]] = []

    def update(self, a: str, b: str, ts: int) -> None:
        self.fed.append((a, b, ts))
        super().update(a, b, ts)


def _ev(i: int, a: str, b: str, ts: int, event_id: str | None = None) -> LogEvent:
    return LogEvent(event_id or f"e{i}", "x", a, b, ts, i)


def test_systems_see_only_what_the_consumer_counts() -> None:
    events = [
        _ev(0, "a", "b", T0),
        _ev(1, "a", "b", T0 + 10_000),  # inside the 60 s cooldown: duplicate
        _ev(2, "a", "b", T0, event_id="e0"),  # the same id and kill again: resend
        _ev(3, "c", "b", T0 + 20_000, event_id="e0"),  # the same id, another kill: id_reused
        _ev(4, "a", "b", T0 + 70_000),  # past the cooldown: counted
        _ev(5, "b", "c", T0 + 5 * DAY),  # counted; the late one below is 3 days older
        _ev(6, "c", "a", T0 + 2 * DAY),
    ]
    spy = _Spy()
    result = run_log(events, [spy], Params(), HarnessOptions(order="file"))
    assert result.verdicts == {"counted": 3, "duplicate": 1, "id_reused": 1, "late": 1, "resend": 1}
    assert spy.fed == [("a", "b", T0), ("a", "b", T0 + 70_000), ("b", "c", T0 + 5 * DAY)]
    by_time = run_log(events, [_Spy()], Params(), HarnessOptions(order="time"))
    assert by_time.verdicts["counted"] == 4  # sorted by ts, nothing is late


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5), st.integers(0, 5), st.integers(0, 3 * DAY), st.integers(0, 40)
        ),
        min_size=1,
        max_size=120,
    ),
    st.sampled_from(["time", "file"]),
)
def test_every_engine_model_counts_what_the_consumer_counts(
    rows: list[tuple[int, int, int, int]], order: str
) -> None:
    # Random logs with repeats inside the cooldown, late events (file order), resent and reused
    # ids: each engine model's own book must count exactly the kills the consumer's rules
    # count (ModelSystem raises otherwise), and every system scores every held-out kill.
    from engine import MODELS

    events = [
        _ev(k, f"p{a}", f"p{b}", T0 + ts, event_id=f"e{i}")
        for k, (a, b, ts, i) in enumerate(rows)
        if a != b
    ]
    if not events:
        return
    params = Params()
    recommended = Params.from_overrides(profile_overrides("recommended"))
    systems = [
        ModelSystem(model_named(m, params=params), params, 300_000, lateness_ms=DAY) for m in MODELS
    ]
    systems.append(
        ModelSystem(model_named("adr", params=recommended), recommended, 300_000, "r", DAY)
    )
    result = run_log(events, systems, params, HarnessOptions(order=order, lateness_ms=DAY))
    assert sum(result.verdicts.values()) == len(events)
    assert result.counted == result.verdicts.get("counted", 0)
    for system in systems:
        assert system.book.counted == result.counted
    for trace in result.traces:
        assert len(trace.p) == len(result.y) and len(trace.tier_changes) == len(result.y)
        assert all(0.0 <= p <= 1.0 for p in trace.p)


def test_held_out_is_the_end_of_the_time_span_and_orientation_is_the_id_bit() -> None:
    events = [_ev(i, f"p{i % 7}", f"p{(i * 3 + 1) % 7}", T0 + i * 3_600_000) for i in range(200)]
    events = [e for e in events if e.attacker != e.victim]
    result = run_log(events, [Elo(k=32.0)], Params(), HarnessOptions(holdout=0.25))
    first, last = events[0].ts, events[-1].ts
    assert result.split_ts == first + math.ceil(0.75 * (last - first))
    held = [e for e in events if e.ts >= result.split_ts]
    assert result.y == [1.0 if first_is_attacker(e.id) else 0.0 for e in held]
    assert result.day == [e.ts // DAY for e in held]
    assert 0 < sum(result.y) < len(result.y)  # both outcomes occur


def test_repeat_runs_sum_the_counted_kills_only() -> None:
    # Warm-up kills, then in the held-out part a burst of 12 kills of one victim 10 s apart
    # (2 counted: the cooldown drops the rest) and a paced run of 6 kills 65 s apart (6 counted).
    warm = [_ev(i, f"w{i % 5}", f"w{(i + 2) % 5}", T0 + i * 600_000) for i in range(60)]
    start = T0 + 10 * DAY
    burst = [_ev(100 + k, "f", "v", start + k * 10_000) for k in range(12)]
    paced = [_ev(200 + k, "g", "u", start + DAY + k * 65_000) for k in range(6)]
    tail = [_ev(300, "w1", "w3", start + 3 * DAY)]
    elo = Elo(k=32.0)
    result = run_log(warm + burst + paced + tail, [elo], Params(), HarnessOptions(holdout=0.5))
    assert result.run_kills == [12, 6]
    assert result.run_counted == [2, 6]
    gains = result.traces[0].run_gain_sd
    # Elo is zero-sum and the pairs are fresh: the gain is the attacker's rating now − 1500
    # over the SD at the run's start, both positive.
    assert gains[0] > 0 and gains[1] > gains[0]
    assert result.traces[0].run_loss_sd == pytest.approx(gains)


def test_the_engine_model_adapter_is_the_rating_book() -> None:
    # ADR through engine.model_named behind ModelSystem (engine.ModelBook) predicts and rates as
    # RatingBook does, the book the consumer's equivalence tests pin.
    params = Params()
    book_side = AdrSystem(params, calibrate_every_ms=300_000)
    model_side = ModelSystem(model_named("adr", params=params), params, 300_000)
    rng = np.random.default_rng(3)
    ts = T0
    for _ in range(1500):
        ts += int(rng.integers(1, 4 * 3_600_000))
        a, b = rng.choice(12, size=2, replace=False)
        pa, pb = f"p{a}", f"p{b}"
        assert model_side.predict(pa, pb, ts) == book_side.predict(pa, pb, ts)
        before = book_side.book.counted
        book_side.update(pa, pb, ts)
        if book_side.book.counted > before:
            model_side.update(pa, pb, ts)
    for player, state in book_side.book.players().items():
        assert model_side.book.player(player) == state


# -- the recommendation ---------------------------------------------------------------------


def _row(ll: float, diff_lo: float, tiers: float) -> dict[str, object]:
    return {
        "log_loss": {"point": ll, "lo": ll - 0.01, "hi": ll + 0.01},
        "log_loss_minus_best": {"point": 0.0, "lo": diff_lo, "hi": diff_lo + 0.02},
        "tier_changes_per_1000": {"point": tiers, "lo": tiers, "hi": tiers},
    }


def test_recommendation_rules() -> None:
    clear = {"a": _row(0.40, 0.0, 10), "b": _row(0.45, 0.01, 5), "c": _row(0.5, 0.02, 1)}
    got = recommend(clear, "a", "c", MIN_DAYS)
    assert got["winner"] == "a" and got["line"].startswith("recommended: a ")
    # b's paired interval touches 0: no clear winner; the current model c is not tied, so the
    # tied model with fewer tier changes (b) is the choice
    tied = {**clear, "b": _row(0.41, -0.001, 5)}
    got = recommend(tied, "a", "c", MIN_DAYS)
    assert got["winner"] is None and got["tied"] == ["a", "b"] and got["choice"] == "b"
    assert got["line"].startswith("no clear winner among a, b")
    assert recommend(tied, "a", "a", MIN_DAYS)["choice"] == "a"  # the current model is kept
    few = recommend(clear, "a", "c", MIN_DAYS - 1)  # too few days: nobody is separated
    assert few["winner"] is None and few["tied"] == ["a", "b", "c"] and few["choice"] == "c"


def test_summarize_pairs_the_differences() -> None:
    events = [_ev(i, f"p{i % 9}", f"p{(i * 5 + 2) % 9}", T0 + i * 1_800_000) for i in range(1500)]
    events = [e for e in events if e.attacker != e.victim]
    result = run_log(events, [Elo(k=32.0), Elo(k=16.0)], Params(), HarnessOptions())
    s = summarize(result, BootstrapOptions(300, 1), "elo-k32")
    assert s["days"] >= MIN_DAYS
    best = s["best"]
    assert s["systems"][best]["log_loss_minus_best"] == {"point": 0.0, "lo": 0.0, "hi": 0.0}
    again = summarize(result, BootstrapOptions(300, 1), "elo-k32")
    assert again == s  # the same seed, the same figures


# -- the command ----------------------------------------------------------------------------


def _adr(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adr_cli", "evaluate", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_evaluate_events_quick_on_the_sample(tmp_path: Path) -> None:
    out = tmp_path / "report"
    done = _adr("--events", str(SAMPLE), "--quick", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("events: 2470 records, 8 bad (skipped)")
    assert lines[-1].startswith(("recommended: ", "no clear winner among "))
    report = json.loads((out / "evaluation.json").read_text())
    meta, summary = report["meta"], report["summary"]
    assert meta["bad_records"] == {
        r: 1
        for r in ("bad_id", "missing_field", "not_a_map", "not_json", "self_kill",
                  "ts_out_of_range", "unknown_version", "wrong_type")
    }  # fmt: skip
    assert meta["verdicts"]["resend"] == 1 and meta["verdicts"]["id_reused"] == 1
    assert meta["verdicts"]["duplicate"] > 0  # the burst farmer's kills inside the cooldown
    assert summary["repeat_runs"] == 2  # the two planted farming sessions
    assert summary["bootstrap"]["resamples"] == 200
    assert summary["recommendation"]["line"] == lines[-1]
    for name, row in summary["systems"].items():
        for key in ("log_loss", "auc", "ece", "tier_changes_per_1000", "repeat_gain_sd"):
            ci = row[key]
            assert ci["lo"] <= ci["point"] <= ci["hi"], (name, key)
        assert name in lines[-1] or name in "\n".join(lines)
    assert sorted(p.name for p in out.glob("*.png")) == ["calibration.png", "log_loss.png"]
    text = (out / "report.md").read_text()
    assert summary["recommendation"]["line"] in text
    assert "| not_json | 1 |" in text


def test_the_sample_is_what_its_generator_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("make_sample_events.py"))],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert done.stdout == SAMPLE.read_text()


def test_evaluate_events_reads_msgpack_from_stdin(tmp_path: Path) -> None:
    records = []
    for line in SAMPLE.read_text().splitlines()[:400]:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the sample's one record that is not JSON
    data = b"".join(msgpack.packb(r) for r in records)
    done = subprocess.run(
        [sys.executable, "-m", "adr_cli", "evaluate", "--events", "-", "--quick",
         "--models", "adr,eval:elo-k32", "--current", "eval:elo-k32", "--out", str(tmp_path)],
        cwd=REPO, input=data, capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    meta = json.loads((tmp_path / "evaluation.json").read_text())["meta"]
    assert meta["format"] == "msgpack" and meta["records"] == len(records) == 399
    assert list(meta["systems"]) == ["adr", "eval:elo-k32"]


def test_auc_is_left_out_when_one_outcome_only() -> None:
    from evaluation._log_metrics import _auc

    assert _auc(_held([0.2, 0.7], [1, 1]), day_multiplicities(1, 3, 0)) is None


def test_model_params_reach_the_engine_model(tmp_path: Path) -> None:
    runs = {}
    for k in ("32", "8"):
        out = tmp_path / k
        done = _adr("--events", str(SAMPLE), "--quick", "--models", "elo",
                    "--model-param", f"elo.k={k}", "--out", str(out))  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        runs[k] = json.loads((out / "evaluation.json").read_text())
    assert runs["8"]["meta"]["systems"]["elo"] == "engine model `elo` (k = 8)"
    loss = {k: r["summary"]["systems"]["elo"]["log_loss"]["point"] for k, r in runs.items()}
    assert loss["8"] != loss["32"]
    # no adr among the models: nothing to keep, the tie-break goes to the tier rule
    assert runs["8"]["summary"]["recommendation"]["choice"] == "elo"
    bad = _adr("--events", str(SAMPLE), "--model-param", "adr.theta=1", "--out", str(tmp_path))
    assert bad.returncode == 2 and "--param" in bad.stderr
    unknown = _adr("--events", str(SAMPLE), "--model-param", "elo.nope=1", "--out", str(tmp_path))
    assert unknown.returncode == 2


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--profile", "general"], "ModelBook"),  # the default models: adr first
        (["--models", "adr@general"], "ModelBook"),
        (["--models", "elo", "--param", "pair_decay=600"], "the model 'elo' does not keep"),
    ],
)
def test_evaluate_events_refuses_pair_decay_at_start(
    tmp_path: Path, flags: list[str], said: str
) -> None:
    """Every model runs through ModelBook here, which keeps no pair loads (ADR failed at the
    first counted kill, exit 1); no other model applies pair_decay: exit 2 before any work."""
    done = _adr("--events", str(SAMPLE), "--quick", *flags, "--out", str(tmp_path / "o"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "pair_decay" in done.stderr and said in done.stderr
    assert "evaluation started" not in done.stderr and not (tmp_path / "o").exists()


def test_evaluate_events_usage_errors(tmp_path: Path) -> None:
    old_flag = _adr("--events", "10000", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert old_flag.returncode == 2 and "--kills N" in old_flag.stderr
    missing = _adr("--events", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    unknown = _adr("--events", str(SAMPLE), "--models", "adr,nosuch", "--out", str(tmp_path))
    assert unknown.returncode == 2 and "unknown model 'nosuch'" in unknown.stderr
    mixed = _adr("--events", str(SAMPLE), "--systems", "adr", "--out", str(tmp_path / "o"))
    assert mixed.returncode == 2 and "--systems" in mixed.stderr and "--models" in mixed.stderr
    empty = tmp_path / "bad.jsonl"
    empty.write_text("{\n[1]\n")
    nothing = _adr("--events", str(empty), "--out", str(tmp_path / "o"))
    assert nothing.returncode == 1 and "no good kill event" in nothing.stderr
