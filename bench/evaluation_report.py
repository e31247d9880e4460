"""Time `adr evaluate` (the whole report) and print wall time, CPU time and peak memory.

    python bench/evaluation_report.py --jobs 2        # the full report (what reports/latest is)
    python bench/evaluation_report.py --quick --jobs 2              # what CI runs
    python bench/events_log.py --kills 50000 > /tmp/log.jsonl      # a synthetic studio log
    python bench/evaluation_report.py --events /tmp/log.jsonl       # adr evaluate --events

Arguments are passed to `adr evaluate`; the report goes to a temporary directory. With --events,
`events` is the log's records and `events_per_cpu_s` their rate per CPU second (the figure to
compare on a shared machine).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "adr_cli", "evaluate", *argv, "--out", out],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        wall = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures = {}
        if done.returncode == 0 and "--events" in argv:
            with open(os.path.join(out, "evaluation.json")) as fh:
                figures = {"events_total": json.load(fh)["meta"]["records"]}
        elif done.returncode == 0:
            with open(os.path.join(out, "figures.json")) as fh:
                figures = json.load(fh)["meta"]
    cpu = usage.ru_utime + usage.ru_stime
    events = figures.get("events_total")
    print(
        json.dumps(
            {
                "command": "adr evaluate " + " ".join(argv),
                "exit": done.returncode,
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "max_rss_mib": round(usage.ru_maxrss / 1024, 1),
                "events": events,
                "events_per_cpu_s": round(events / cpu) if events and cpu else None,
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
            }
        )
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
