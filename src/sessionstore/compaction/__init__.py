"""Compaction tiers: micro (view only), full (summary + tail, persisted), ultimate (guaranteed fit)."""
