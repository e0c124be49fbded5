"""What a person asks of the past: revisions as they type them, diff, search, and what sessions are
called (titles, rename, rm and its undo)."""
