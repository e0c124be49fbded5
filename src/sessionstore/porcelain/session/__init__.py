"""A session and its store layout: lockstep appends through the one commit writer, replay, revisions,
the compaction cascade, the gauge and the heads cache `session list` reads."""
