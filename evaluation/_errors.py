"""The evaluation package's root exception."""


class EvaluationError(Exception):
    """Anything `adr evaluate` cannot do: bad arguments, an unusable stream, a missing extra."""
