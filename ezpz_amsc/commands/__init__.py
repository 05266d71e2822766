"""The CLI's subcommands, one thin click command per module (only click at module top)."""
