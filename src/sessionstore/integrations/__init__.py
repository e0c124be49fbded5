"""pydantic-ai adapters over the porcelain: run_turn / SessionCapability and FileConversationStore."""
