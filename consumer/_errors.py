"""The consumer's root exception."""


class ConsumerError(Exception):
    """Root of every error `consumer` raises (bad configuration, unusable Redis data)."""


class RedisBehind(ConsumerError):
    """Redis holds an earlier offset for a partition than this instance wrote and saw
    acknowledged: it lost acknowledged writes (a restart from an older snapshot, a failover to
    an asynchronous replica, AOF `everysec` after a crash)."""

    def __init__(self, partition: int, stored: int | None, confirmed: int) -> None:
        super().__init__(
            f"partition {partition}: Redis holds next offset {stored}, "
            f"this instance wrote {confirmed}"
        )
        self.partition = partition
        self.stored = stored
        self.confirmed = confirmed
