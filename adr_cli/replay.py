"""`adr replay`: rate a file of kill events offline with the engine (RatingBook for ADR, the
default model; ModelBook for the others, `--model`).

Reads JSON lines or a msgpack stream of maps {"id", "arena", "attacker", "victim", "ts"} (ts in ms
since the Unix epoch), in file order, and writes DIR/players.jsonl and DIR/population.json.
stdout stays empty; logs are JSON lines on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any, Final

import msgpack
import msgspec

from adr_cli._errors import CliError
from engine import (
    MODELS,
    NO_SEASONS,
    TIER_LABELS,
    EngineError,
    ModelBook,
    ParamError,
    Params,
    RatingBook,
    RatingModel,
    SeasonSchedule,
    Snapshot,
    check_seasons,
    model_named,
)
from redis_layout.event_ids import CountingRules
from redis_layout.season_schedule import decode_schedule
from runtime.params import add_param_argument, param_overrides
from runtime.settings import key_values

EXIT_OK: Final = 0
EXIT_IO: Final = 1
EXIT_USAGE: Final = 2

_MSGPACK_MAP_FIRST_BYTES: Final = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])
_PROGRESS_EVERY: Final = 0.25  # seconds between progress bar redraws

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class ReplayEvent(msgspec.Struct, frozen=True):
    """One input record; unknown keys (e.g. the wire format's "v") are ignored."""

    id: str
    arena: str
    attacker: NonEmpty
    victim: NonEmpty
    ts: Annotated[int, msgspec.Meta(ge=0)]


class _Malformed(CliError):
    """A record that is not a kill event; carries the reason."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "Snapshots: one is taken before a counted event at time t when none exists yet or\n"
        "t - (last snapshot time) >= --calibrate-every (event time): docs/algorithm.md.\n\n"
        "Late events (a rule the paper does not cover): the replay keeps a watermark W, the\n"
        "largest event time accepted so far. An event with ts < W - --lateness is rejected as\n"
        "'late' and counted in 'rejected'. This bounds the repeat-kill table: an a->b entry\n"
        "from time t' is forgotten once t' + t_cooldown <= W - lateness, and dedup stays exact\n"
        "for every accepted event. The consumer's accepted event-age window defaults to the\n"
        "same 3600 s.\n\n"
        "Event ids (the consumer's rule, schemas/kill_event.md): a counted event's id sent\n"
        "again with the same arena, players and ts is a duplicate, even after the pair's\n"
        "cooldown has moved on; with another kill it is rejected as 'id_reused'. An id is\n"
        "remembered until W - --lateness - t_cooldown reaches the end of its ts's 10 s\n"
        "bucket (the consumer's record index).\n\n"
        "Models (--model): adr (the default: the paper's ADR, --param/--profile), elo,\n"
        "glicko2, trueskill, weng-lin (docs/models.md: state, P, update, display rating).\n"
        "Every model counts the same events: cooldown, lateness and event ids are the pool's\n"
        "rules above (t_cooldown is a --param whatever the model). --model-param sets the\n"
        "model's own parameters (e.g. elo k_rule=fide, glicko2 period_ms=3600000).\n\n"
        "Exit codes: 0 done (malformed records are reported and skipped), 1 input/output\n"
        "error, 2 usage error (unknown model, unknown --param or --model-param name, bad\n"
        "value, bad --snapshot or --seasons file)."
    )
    parser.add_argument(
        "events", metavar="EVENTS", help="events file (JSON lines or msgpack), - for stdin"
    )
    parser.add_argument(
        "--out-dir",
        required=True,
        type=Path,
        metavar="DIR",
        help="where to write players.jsonl and population.json",
    )
    parser.add_argument(
        "--calibrate-every",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="snapshot interval in event-time seconds (default 300)",
    )
    add_param_argument(parser, env=False)
    parser.add_argument(
        "--model",
        default=MODELS[0],
        metavar="NAME",
        help=f"the rating model: {', '.join(MODELS)} (default {MODELS[0]})",
    )
    parser.add_argument(
        "--model-param",
        dest="model_param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a parameter of a model other than adr (repeatable; docs/models.md)",
    )
    parser.add_argument(
        "--snapshot",
        type=Path,
        metavar="FILE",
        help="use this population.json-like snapshot (mean_mu_active, boundaries); never calibrate",
    )
    parser.add_argument(
        "--seasons",
        type=Path,
        metavar="FILE",
        help="the pool's season schedule (what `adr season schedule` prints): each season's "
        "soft reset at a player's first counted event of it, as the consumer applies it, in the "
        "model's own scale (docs/models.md)",
    )
    parser.add_argument(
        "--lateness",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="reject events older than the watermark by more than this (default 3600)",
    )
    parser.add_argument(
        "--format",
        choices=("auto", "jsonl", "msgpack"),
        default="auto",
        help="input format (default: detected from the first byte)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress bar on stderr (auto: only when stderr is a terminal)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        params = Params.from_overrides(param_overrides(args.param, profile=args.profile))
        model_overrides = key_values(
            args.model_param,
            lambda item: ParamError(f"--model-param expects NAME=VALUE, got {item!r}"),
        )
        if args.model == MODELS[0] and model_overrides:
            raise ParamError("adr's parameters are --param names, not --model-param")
        model = model_named(args.model, model_overrides, params)
        fixed = _read_snapshot(args.snapshot) if args.snapshot is not None else None
        every_ms = _seconds_to_ms(args.calibrate_every, "--calibrate-every")
        lateness_ms = _seconds_to_ms(args.lateness, "--lateness")
        seasons = _seasons_for(args.seasons, model)
    except (ParamError, EngineError) as exc:
        _log("error", "usage", message=str(exc))
        return EXIT_USAGE
    book: Book
    if model.name == MODELS[0]:
        book = RatingBook(
            params, calibrate_every_ms=every_ms, fixed_snapshot=fixed, lateness_ms=lateness_ms,
            seasons=seasons,
        )  # fmt: skip
    else:
        book = ModelBook(
            model, params, calibrate_every_ms=every_ms, fixed_snapshot=fixed,
            lateness_ms=lateness_ms, seasons=seasons,
        )  # fmt: skip
    try:
        stream, close = _open(args.events)
    except OSError as exc:
        _log("error", "cannot_open", path=args.events, message=str(exc))
        return EXIT_IO
    started = time.monotonic()
    malformed = 0
    by_id = CountingRules(book)
    try:
        progress = _Progress(stream, args.progress)
        for number, item in _records(stream, args.format):
            if isinstance(item, _Malformed):
                malformed += 1
                _log("warning", "malformed", line=number, reason=str(item))
                continue
            by_id.apply(item.id, item.arena, item.attacker, item.victim, item.ts)
            progress.tick(number)
        progress.done()
    except (OSError, ValueError) as exc:
        _log("error", "read_failed", path=args.events, message=str(exc))
        return EXIT_IO
    finally:
        close()
    try:
        _write_outputs(args.out_dir, book, malformed, by_id)
    except OSError as exc:
        _log("error", "write_failed", path=str(args.out_dir), message=str(exc))
        return EXIT_IO
    elapsed = time.monotonic() - started
    _log(
        "info", "replayed", model=model.name, counted=book.counted,
        duplicates=book.duplicates + by_id.resends,
        rejected=book.rejected + malformed + by_id.reused, malformed=malformed, players=len(book),
        seconds=round(elapsed, 3),
    )  # fmt: skip
    return EXIT_OK


# -- input ------------------------------------------------------------------------------------


def _seconds_to_ms(seconds: float, flag: str) -> int:
    if not seconds >= 0 or seconds == float("inf"):
        raise ParamError(f"{flag} must be a finite number of seconds >= 0, got {seconds!r}")
    return round(seconds * 1000)


def _read_snapshot(path: Path) -> Snapshot:
    """A population.json-like file: mean_mu_active (number) and boundaries (14 numbers or null)."""
    try:
        data = json.loads(path.read_text())
        mean = data["mean_mu_active"]
        bounds = data.get("boundaries")
        if isinstance(mean, bool) or not isinstance(mean, int | float):
            raise ValueError("mean_mu_active must be a number")
        if bounds is not None:
            if not isinstance(bounds, list) or len(bounds) != 14:
                raise ValueError("boundaries must be 14 numbers or null")
            if not all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds):
                raise ValueError("boundaries must be numbers")
            if any(bounds[k] < bounds[k + 1] for k in range(13)):
                raise ValueError("boundaries must be non-increasing")
            bounds = tuple(float(b) for b in bounds)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EngineError(f"bad --snapshot file {str(path)!r}: {exc}") from exc
    count = data.get("active_count", 0)
    return Snapshot(
        taken_at=None,
        mean_mu_active=float(mean),
        boundaries=bounds,
        active_count=count if isinstance(count, int) else 0,
    )


def _read_seasons(path: Path) -> SeasonSchedule:
    """A season schedule file (redis_layout/season_schedule.py's text)."""
    try:
        return decode_schedule(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise EngineError(f"bad --seasons file {str(path)!r}: {exc}") from exc


def _seasons_for(path: Path | None, model: RatingModel[Any]) -> SeasonSchedule:
    """The --seasons schedule (none without a file), for a book of any model (`adr replay` and
    `adr rebuild`): each model applies it in its own scale (RatingModel.season_step); one it
    cannot apply (an uncertainty raise for Elo) is a ParamError (engine.check_seasons), as
    `adr season close` refuses it."""
    schedule = _read_seasons(path) if path is not None else NO_SEASONS
    check_seasons(model, schedule)
    return schedule


def _open(path: str) -> tuple[IO[bytes], Any]:
    if path == "-":
        return sys.stdin.buffer, lambda: None
    stream = open(path, "rb")  # noqa: SIM115 - closed by the returned closer
    return stream, stream.close


def _detect(stream: IO[bytes]) -> str:
    peek = getattr(stream, "peek", None)
    head = peek(64) if peek is not None else b""
    first = head.lstrip()[:1]
    return "msgpack" if first and first[0] in _MSGPACK_MAP_FIRST_BYTES else "jsonl"


def _records(stream: IO[bytes], fmt: str) -> Iterator[tuple[int, ReplayEvent | _Malformed]]:
    """(line or record number, event or why it is malformed), in file order."""
    if fmt == "auto":
        fmt = _detect(stream)
    return _msgpack_records(stream) if fmt == "msgpack" else _json_records(stream)


_JSON: Final = msgspec.json.Decoder(ReplayEvent)


def _json_records(stream: IO[bytes]) -> Iterator[tuple[int, ReplayEvent | _Malformed]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield number, _JSON.decode(line)
        except msgspec.DecodeError as exc:
            yield number, _Malformed(str(exc))


def _msgpack_records(stream: IO[bytes]) -> Iterator[tuple[int, ReplayEvent | _Malformed]]:
    unpacker = msgpack.Unpacker(stream, raw=False, strict_map_key=False)
    number = 0
    while True:
        try:
            obj = unpacker.unpack()
        except msgpack.OutOfData:
            return
        except (msgpack.UnpackException, ValueError) as exc:
            raise ValueError(f"msgpack stream unreadable after record {number}: {exc}") from exc
        number += 1
        try:
            yield number, msgspec.convert(obj, ReplayEvent)
        except msgspec.ValidationError as exc:
            yield number, _Malformed(str(exc))


# -- output -----------------------------------------------------------------------------------


def _write_outputs(out_dir: Path, book: Book, malformed: int, by_id: CountingRules) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(book, ModelBook):
        _write_model_outputs(out_dir, book, malformed, by_id)
        return
    with _atomic(out_dir / "players.jsonl") as out:
        for player, s in book.iter_players():
            record = {
                "player": player, "mu": s.mu, "sigma": s.sigma, "streak": s.streak,
                "phi": s.phi, "pool": s.pool, "n": s.n, "last_ts": s.last_ts,
                "tier": TIER_LABELS[s.tier - 1] if s.tier else None,
                "h_up": s.h_up, "h_down": s.h_down,
            }  # fmt: skip
            out.write(json.dumps(record, separators=(",", ":"), allow_nan=False))
            out.write("\n")
    snap = book.snapshot
    reasons = {**book.rejected_by_reason, "malformed": malformed, "id_reused": by_id.reused}
    population = {
        "boundaries": list(snap.boundaries) if snap.boundaries is not None else None,
        "mean_mu_active": snap.mean_mu_active,
        "sigma_mean": book.sigma_mean(),
        "counted": book.counted,
        "duplicates": book.duplicates + by_id.resends,
        "rejected": book.rejected + malformed + by_id.reused,
        "rejected_by_reason": dict(sorted(reasons.items())),
        "active_count": snap.active_count,
        "snapshot_taken_at": snap.taken_at,
        "players": len(book),
    }
    if book.seasons.starts:
        population["season"] = book.ladder  # the season the live board shows (0: the first)
    with _atomic(out_dir / "population.json") as out:
        out.write(json.dumps(population, indent=2, allow_nan=False))
        out.write("\n")


def _write_model_outputs(
    out_dir: Path, book: ModelBook[Any], malformed: int, by_id: CountingRules
) -> None:
    """A model other than ADR: per player its state's fields (docs/models.md) and its display
    rating; population.json as ADR's, with the model's name and no σ̄ (ADR's own aggregate)."""
    model = book.model
    with _atomic(out_dir / "players.jsonl") as out:
        for player, state in book.iter_players():
            record = {"player": player, **msgspec.structs.asdict(state)}
            record["display"] = model.display(state)
            out.write(json.dumps(record, separators=(",", ":"), allow_nan=False))
            out.write("\n")
    snap = book.snapshot
    reasons = {**book.rejected_by_reason, "malformed": malformed, "id_reused": by_id.reused}
    population = {
        "model": model.name,
        "boundaries": list(snap.boundaries) if snap.boundaries is not None else None,
        "mean_display_active": snap.mean_mu_active,
        "counted": book.counted,
        "duplicates": book.duplicates + by_id.resends,
        "rejected": book.rejected + malformed + by_id.reused,
        "rejected_by_reason": dict(sorted(reasons.items())),
        "active_count": snap.active_count,
        "snapshot_taken_at": snap.taken_at,
        "players": len(book),
    }
    if book.seasons.starts:
        population["season"] = book.ladder  # the season the live board shows (0: the first)
    with _atomic(out_dir / "population.json") as out:
        out.write(json.dumps(population, indent=2, allow_nan=False))
        out.write("\n")


Book = RatingBook | ModelBook[Any]
"""ADR's columnar book, or the generic one of another model: the same rules and counters."""


class _atomic:
    """Write to a temporary file and rename it into place on success."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")

    def __enter__(self) -> IO[str]:
        self._file = open(self._tmp, "w", encoding="utf-8")
        return self._file

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._file.close()
        if exc_type is None:
            os.replace(self._tmp, self._path)
        else:
            self._tmp.unlink(missing_ok=True)


# -- stderr -----------------------------------------------------------------------------------


def _log(level: str, event: str, **fields: Any) -> None:
    record = {
        "ts": round(time.time(), 3),
        "level": level,
        "cmd": "replay",
        "event": event,
        **fields,
    }
    print(json.dumps(record, separators=(",", ":")), file=sys.stderr, flush=True)


class _Progress:
    """A one-line progress bar on stderr (bytes read of the file size, or records so far)."""

    def __init__(self, stream: IO[bytes], mode: str) -> None:
        self._on = mode == "always" or (mode == "auto" and sys.stderr.isatty())
        self._stream = stream
        self._total = 0
        try:
            info = os.fstat(stream.fileno())
            self._total = info.st_size if stat.S_ISREG(info.st_mode) else 0
        except (OSError, ValueError, AttributeError):
            self._total = 0
        self._started = self._last = time.monotonic()
        self._count = 0

    def tick(self, number: int) -> None:
        self._count += 1
        if not self._on or self._count & 1023:
            return
        now = time.monotonic()
        if now - self._last >= _PROGRESS_EVERY:
            self._last = now
            self._draw(number, now)

    def _draw(self, number: int, now: float) -> None:
        rate = self._count / max(now - self._started, 1e-9)
        done = ""
        if self._total:
            try:
                fraction = min(1.0, self._stream.tell() / self._total)
            except (OSError, ValueError):
                fraction = 0.0
            filled = int(fraction * 30)
            done = f"[{'#' * filled}{'.' * (30 - filled)}] {fraction * 100:5.1f}% "
        sys.stderr.write(f"\r{done}{number:,} records  {rate:,.0f} events/s")
        sys.stderr.flush()

    def done(self) -> None:
        if self._on:
            self._draw(self._count, time.monotonic())
            sys.stderr.write("\n")
            sys.stderr.flush()
