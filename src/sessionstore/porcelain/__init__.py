"""Porcelain: the store's features as sub-packages over the plumbing, and `SessionStore`, their facade.

session/ (a session in lockstep, its writer, cascade, gauge, heads) is the floor the others stand on:
history/ (revisions as people type them, diff, search, naming), maintenance/ (fsck, gc, crash leftovers),
importing/ (transcripts in), sharing/ (push and pull through git remotes).
"""
