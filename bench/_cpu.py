"""CPU time per process over a benchmark phase, from /proc (Linux): where the cores went."""

from __future__ import annotations

import os
import resource
import time
from typing import Any

import redis

from stack._procs import pid_cmdline

_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds used so far by pid (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_S


def _machine_s() -> tuple[float, float]:
    """CPU seconds so far: all cores busy (not idle, waiting on I/O or stolen), and stolen (the
    hypervisor ran someone else on a core this VM wanted: a slower run, not a costlier one)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq) * _TICK_S, steal * _TICK_S


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on `port` (any address), from /proc/net/tcp and tcp6."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                found.add(cols[9])
    return found


def _listener(port: int) -> int | None:
    """The process listening on `port`: another session's broker may run beside the bench's."""
    wanted = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not wanted:
        return None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                if os.readlink(f"/proc/{entry}/fd/{fd}") in wanted:
                    return int(entry)
        except OSError:  # gone, or not ours to read
            continue
    return None


def stack_pids(redis_url: str, bootstrap: str | None = None) -> dict[str, int]:
    """The redis-server on the bench's port and the Kafka broker: the one listening on the first
    bootstrap address's port, else the first `java ... kafka.Kafka` found."""
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    found: dict[str, int] = {}
    if bootstrap:
        broker = _listener(int(bootstrap.split(",")[0].rsplit(":", 1)[1]))
        if broker is not None:
            found["broker"] = broker
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = pid_cmdline(int(entry))
        if argv and "redis-server" in argv[0] and f":{port}" in " ".join(argv):  # retitled
            found["redis"] = int(entry)
        elif argv and argv[0].endswith("java") and "kafka.Kafka" in argv:
            found.setdefault("broker", int(entry))
    return found


def _commandstats(client: redis.Redis) -> dict[str, tuple[int, int]]:
    """command -> (calls, µs) so far, from INFO commandstats. A command a script runs is counted
    both on its own line and inside the script's (evalsha) line."""
    stats: Any = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
        for name, v in stats.items()
    }


class CpuMeter:
    """CPU time per process over a phase: where the machine's two cores went, per event, and
    Redis's time per command."""

    def __init__(
        self, redis_url: str, children: str | None = None, bootstrap: str | None = None
    ) -> None:
        self.pids = {"consumer": os.getpid(), **stack_pids(redis_url, bootstrap)}
        self.children = children
        self._redis = redis.Redis.from_url(redis_url)
        self._commands = _commandstats(self._redis)
        self._start = self._sample()

    def _sample(self) -> dict[str, float]:
        got: dict[str, float] = {}
        for name, pid in list(self.pids.items()):
            try:
                got[name] = _proc_cpu_s(pid)
            except FileNotFoundError:  # e.g. another session's broker, found first, has stopped
                del self.pids[name]
        if self.children:  # child processes this one has waited for (gone from /proc)
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            got[self.children] = usage.ru_utime + usage.ru_stime
        got["machine"], got["stolen"] = _machine_s()
        got["wall"] = time.monotonic()
        got["major_faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        return got

    def report(self, events: int) -> dict[str, Any]:
        end = self._sample()
        wall = end["wall"] - self._start["wall"]
        faults = int(end.pop("major_faults") - self._start["major_faults"])
        used = {k: end[k] - self._start[k] for k in end if k != "wall" and k in self._start}
        used["other"] = used["machine"] - sum(
            v for k, v in used.items() if k not in ("machine", "stolen")
        )
        commands = _commandstats(self._redis)
        self._redis.close()
        per_command = {}
        for name, (calls, usec) in sorted(commands.items(), key=lambda kv: -kv[1][1]):
            calls0, usec0 = self._commands.get(name, (0, 0))
            if calls > calls0:
                per_command[name] = {
                    "calls_per_event": round((calls - calls0) / events, 3),
                    "us_per_event": round((usec - usec0) / events, 2),
                }
        return {
            "cores_busy": {k: round(v / wall, 2) for k, v in used.items()},
            "cpu_us_per_event": {k: round(v / events * 1e6, 1) for k, v in used.items()},
            "consumer_major_page_faults": faults,  # pages this process had to read back in
            "redis_commands": per_command,
        }
