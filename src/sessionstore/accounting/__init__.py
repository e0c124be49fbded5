"""Accounting: token estimates, the measured prefix, thresholds, settings. Imports plumbing only."""
