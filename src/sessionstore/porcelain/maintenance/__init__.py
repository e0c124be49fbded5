"""Keeping a store sound: fsck (verify, repair what is derivable), gc (prune unreachable old blobs), the
leftovers a crash can leave and the split of a log git merged with conflict markers."""
