"""The page of `adr serve` in a real browser: Debian's Chromium, headless, loads it from the
running process, runs its JavaScript against the API and renders; the test reads the rendered DOM
(--dump-dom after a virtual-time budget that lets the fetches finish) and a screenshot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import redis

from engine import TIER_LABELS
from redis_layout import Keys, stamp_layout
from redis_layout.history_codec import HistoryPoint, encode_history_point
from redis_layout.meta_codec import encode_meta
from tests.http_api.conftest import running_serve

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium")
PLAYERS = {f"p{i:02d}": 2000.0 - 10.0 * i for i in range(45)}  # p00 best
ORDER = sorted(PLAYERS, key=lambda p: (PLAYERS[p], p.encode()), reverse=True)
META = {
    "p00": {"display_name": "Zo\u00eb <b>\u2603</b>"},  # shown as text, never as HTML
    "p07": {"display_name": "Seven", "country": "SE", "level": 12},
    "p03": {"country": "FR"},  # no display name: the id alone
}
SHOWN = {p: f"{m['display_name']} {p}" for p, m in META.items() if "display_name" in m}


class _Cells(HTMLParser):
    """The text of each row of the table (or element) with a given id, and element attributes."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.depth, self.rows = table_id, 0, []  # type: ignore[var-annotated]
        self.in_cell = False
        self.polyline: str | None = None
        self.facts: list[str] = []
        self._in_dd = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id") == self.table_id:
            self.depth = 1
        elif tag == "tbody" and self.depth == 1:
            self.depth = 2
        elif tag == "tr" and self.depth == 2:
            self.rows.append([])
        elif tag == "td" and self.depth == 2:
            self.rows[-1].append("")
            self.in_cell = True
        elif tag == "polyline":
            self.polyline = a.get("points")
        elif tag == "dd":
            self._in_dd = True
            self.facts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self.in_cell = False
        elif tag == "table" and self.depth:
            self.depth = 0
        elif tag == "dd":
            self._in_dd = False

    def handle_data(self, data: str) -> None:
        if self.in_cell and self.depth == 2:
            self.rows[-1][-1] += data
        if self._in_dd:
            self.facts[-1] += data


def _render(url: str, table: str, tmp: Path) -> _Cells:
    assert CHROMIUM, "no chromium: apt-get install chromium (scripts/_setup.sh does)"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp}", "--virtual-time-budget=8000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    cells = _Cells(table)
    cells.feed(done.stdout)
    return cells


@pytest.fixture(scope="module")
def pool(redis_url: str) -> tuple[str, Keys]:
    keys = Keys(f"page-{__import__('uuid').uuid4().hex[:8]}")
    admin = redis.Redis.from_url(redis_url)
    counts: dict[str, int] = {}
    for i, (pid, mu) in enumerate(PLAYERS.items()):
        tier = TIER_LABELS[min(14, i // 3)]
        fields = {"mu": repr(mu), "sigma": "70.0", "tier": tier, "n": str(20 + i)}
        admin.hset(keys.player(pid), mapping={**fields, "last_ts": "1764900000000"})
        admin.zadd(keys.lb, {pid: mu})
        counts[tier] = counts.get(tier, 0) + 1
    admin.hset(keys.tier_counts, mapping=counts)
    admin.hset(keys.pop, mapping={"count": len(PLAYERS)})
    bounds = [1990.0 - 30.0 * i for i in range(14)]
    admin.hset(keys.snapshot, mapping={"version": "7", "computed_at": "1",
                                       "boundaries": json.dumps(bounds)})  # fmt: skip
    history = [HistoryPoint(0, s, 1764800000000 + 60_000 * s, 1000.0 + 25.0 * s + (s % 3) * 7,
                            300.0 - 5 * s, None) for s in range(1, 31)]  # fmt: skip
    admin.rpush(keys.history("p07"), *(encode_history_point(p) for p in history))
    admin.hset(keys.meta, mapping={p: encode_meta(m) for p, m in META.items()})
    stamp_layout(admin, keys)
    admin.close()
    return redis_url, keys


def test_the_page_shows_the_board_a_player_and_the_tiers(
    pool: tuple[str, Keys], tmp_path: Path
) -> None:
    url, keys = pool
    with running_serve(url, "--namespace", keys.namespace, "--history-points", "30") as (base, _):
        board = _render(f"{base}/?player=p07", "board", tmp_path / "a")
        assert [r[1] for r in board.rows] == [SHOWN.get(p, p) for p in ORDER[:20]]
        assert board.rows[0][1] == "Zo\u00eb <b>\u2603</b> p00"  # the markup as text
        assert [r[0] for r in board.rows] == [str(i) for i in range(1, 21)]
        assert board.rows[0][2] == "2000.0"
        assert board.facts[:3] == ["p07", "8", f"{PLAYERS['p07']:.1f}"]  # id, rank, μ
        assert board.facts[-2:] == ["SE", "12"]  # the other metadata fields
        assert board.polyline is not None and len(board.polyline.split()) == 30
        second = _render(f"{base}/?page=2", "board", tmp_path / "b")
        assert [r[1] for r in second.rows] == ORDER[20:40]
        tiers = _render(f"{base}/", "tiers", tmp_path / "c")
        assert [r[0] for r in tiers.rows] == list(TIER_LABELS)
        assert [int(r[1]) for r in tiers.rows] == [3] * 15
        assert tiers.rows[0][4] == "1990.0" and tiers.rows[-1][4] == "–"
        shot = tmp_path / "page.png"
        done = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'd'}", "--virtual-time-budget=8000",
             "--window-size=1280,900", f"--screenshot={shot}", f"{base}/?player=p07"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("ADR_PAGE_SCREENSHOT"):  # docs/img/page.png is made this way
            shutil.copyfile(shot, os.environ["ADR_PAGE_SCREENSHOT"])
