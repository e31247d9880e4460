"""The root of the command line's own exceptions."""


class CliError(Exception):
    """A subcommand's input that cannot be used (a record that is not a kill event, a topic that
    cannot be read); the subcommand reports it and exits non-zero."""
