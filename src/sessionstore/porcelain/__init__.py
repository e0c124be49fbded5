"""Porcelain: sessions in lockstep, revisions, maintenance, import/export, pydantic-ai integration."""
