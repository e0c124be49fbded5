"""English: the words of a rule ("never", "don't", "has to"), of an instruction in a file, of an
imperative list item, and of a correction's old value ("$700, not $500")."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="en",
    rules=words(
        "must, mustn't, never, always, only, don't, dont, do not, doesn't, does not, shouldn't, should not,"
        "should, avoid, need to, needs to, has to, have to, required, require, requires, mandatory,"
        "make sure, ensure, at most, at least, no more than, no less than, not allowed, forbidden,"
        "prohibited, not acceptable, unacceptable, under no circumstances, without approval,"
        "without explicit approval, without permission, without asking, without sign-off, stick to,"
        "stick with, prefer, prefers, preferred, rather, from now on, going forward, by default, can't,"
        "cannot, won't, not, no, off limits, off-limits"
    ),
    instructions=words(
        "must, never, always, do not, don't, dont, should, shouldn't, required, mandatory, forbidden,"
        "prohibited, not allowed, make sure, ensure, avoid, have to, has to, need to, needs to,"
        "expected, only"
    ),
    imperatives=words(
        "keep, run, use, add, update, link, install, copy, make, set, include, write, follow, check, put,"
        "call, send, ask, open, close, tag, name, remember, start, stop, wait, read, test, commit, push,"
        "merge, rebase, deploy, restart, document, mention, reply, respond, limit, rename, remove, delete,"
        "review, sign, squash, prefix"
    ),
    old_before=words("not, instead of, rather than, no longer, replacing"),
)
