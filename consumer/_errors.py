"""The consumer's root exception."""


class ConsumerError(Exception):
    """Root of every error `consumer` raises (bad configuration, unusable Redis data)."""
