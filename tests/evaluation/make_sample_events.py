"""Write examples/events/sample.jsonl: a small kill-event log for `adr evaluate --events`.

    python tests/evaluation/make_sample_events.py > examples/events/sample.jsonl

(here, beside its test, because it reads the §10 suite's private stream generator)

Forty players over 40 days (the §10 suite's synthetic stream, evaluation/_stream.py: hidden
skills, logistic outcomes, a skill jump on day 20, two players farming a weak one on day 34, 10 s
apart and 65 s apart), written as the JSON lines `adr replay` reads, with what a real log also
holds: a resent event, a reused id, and one bad record of each kind the checks name (not JSON,
missing field, self-kill, ts out of range, id too long, wrong type, unknown version, not a map).
CI runs `adr evaluate --events examples/events/sample.jsonl --quick` on it
(tests/evaluation/test_evaluate_events.py). Deterministic: the same file every run.
"""

from __future__ import annotations

import json
import sys

from evaluation._stream import StreamConfig, generate

ARENA = "arena-1"


def main() -> None:
    cfg = StreamConfig(
        seed=7, players=40, events=2400, days=40, jump_day=20, absence_start_day=5,
        absence_days=10, farm_day=34, farmers_per_pattern=1,
    )  # fmt: skip
    stream = generate(cfg)
    lines = []
    for k, ev in enumerate(stream.events):
        record = {"id": f"e{k}", "arena": ARENA, "attacker": ev.attacker, "victim": ev.victim,
                  "ts": ev.ts}  # fmt: skip
        lines.append(json.dumps(record))
    first = json.loads(lines[100])
    lines.insert(101, json.dumps(first))  # a resend: the same id and kill again
    reused = {**json.loads(lines[200]), "victim": first["victim"], "attacker": first["attacker"]}
    if reused["attacker"] == reused["victim"]:
        reused["victim"] = "p-reused"
    lines.insert(201, json.dumps(reused))  # id e199 again, another kill: id_reused
    ts = first["ts"]
    bad = [
        '{"id": "b1", "arena": "arena-1", "attacker": "p1", "victim"',  # not JSON (cut off)
        json.dumps({"id": "b2", "arena": ARENA, "attacker": "p1", "ts": ts}),  # no victim
        json.dumps({"id": "b3", "arena": ARENA, "attacker": "p1", "victim": "p1", "ts": ts}),
        json.dumps({"id": "b4", "arena": ARENA, "attacker": "p1", "victim": "p2", "ts": -1}),
        json.dumps({"id": "b5", "arena": ARENA, "attacker": "x" * 65, "victim": "p2", "ts": ts}),
        json.dumps({"id": "b6", "arena": ARENA, "attacker": "p1", "victim": "p2", "ts": str(ts)}),
        json.dumps(
            {"v": 2, "id": "b7", "arena": ARENA, "attacker": "p1", "victim": "p2", "ts": ts}
        ),  # unknown version
        json.dumps(["b8", ARENA, "p1", "p2", ts]),  # not a map
    ]
    for offset, record in enumerate(bad):
        lines.insert(300 + 250 * offset, record)
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
