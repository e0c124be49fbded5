"""Transcripts in: where Claude Code and Codex keep them, staging a new session all-or-nothing, and
re-importing a transcript that grew."""
