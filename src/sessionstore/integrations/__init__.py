"""pydantic-ai adapters over the porcelain: run_turn / SessionCapability (runs.py), SessionToolset
(session_tools.py) and FileConversationStore (conversation_store.py). The package itself imports
nothing: `from sessionstore import SessionToolset, run_turn` loads only what it names."""
