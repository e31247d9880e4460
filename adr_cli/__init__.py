"""The `adr` command line: one subcommand per process kind."""
