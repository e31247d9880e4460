"""The `adr` command line: one subcommand per process kind (main.py's SUBCOMMANDS); the
subcommands that are not a service's own (`replay`, `rebuild`, `check`, `topics`) live here.

Exceptions: `CliError` (root) ← the private `_BrokerError` (check: the topic cannot be read),
`_Malformed` (replay: a record that is not a kill event) and `NamespaceInUse` (rebuild: the
namespace holds keys that are not an unfinished rebuild's). `main.MissingExtra` is a SystemExit
(exit status 2 with the extra to install), not an error.
"""

from adr_cli._errors import CliError

__all__ = ["CliError"]
