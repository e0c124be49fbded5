"""The `session` command line (click). Imports pydantic-ai lazily: log, list and gauge never do."""
