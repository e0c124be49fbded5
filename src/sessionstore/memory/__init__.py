"""Team-shared MEMORY.md: append on exit, compress past the caps, redact secrets, the squash hook."""
