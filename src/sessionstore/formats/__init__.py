"""Pure converters between transcript formats and pydantic-ai messages: no store, no CLI."""
