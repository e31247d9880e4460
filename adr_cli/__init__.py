"""The `adr` command line: one subcommand per process kind (main.py's SUBCOMMANDS); the
subcommands that are not a service's own (`replay`, `check`, `topics`) live here.

Exceptions: `CliError` (root) ← the private `_BrokerError` (check: the topic cannot be read) and
`_Malformed` (replay: a record that is not a kill event). `main.MissingExtra` is a SystemExit
(exit status 2 with the extra to install), not an error.
"""

from adr_cli._errors import CliError

__all__ = ["CliError"]
