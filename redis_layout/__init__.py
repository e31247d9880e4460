"""The Redis layout of a rating pool, with one owner: its key names (`Keys`).

Exceptions: none of its own.
"""

from redis_layout.keys import Keys

__all__ = ["Keys"]
