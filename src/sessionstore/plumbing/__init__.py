"""Plumbing: blobs, commit logs, checkpoint refs, locks and the message codec. Knows nothing of LLMs."""
