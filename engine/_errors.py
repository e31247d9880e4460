"""The engine's exceptions: one root, EngineError."""


class EngineError(Exception):
    """Root of every error the engine raises."""


class ParamError(EngineError, ValueError):
    """A parameter name or value is not acceptable (`--param NAME=VALUE`)."""
