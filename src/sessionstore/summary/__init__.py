"""What a tier-2 summary holds (DESIGN §7 "How a summary is built"): the summarizers, LLM and offline,
and the pieces they are made of. Below compaction/, which decides when and where to cut."""
