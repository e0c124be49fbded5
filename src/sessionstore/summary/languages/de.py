"""German: "niemals force-push", "Das Budget ist 700 €, nicht 500 €"."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="de",
    rules=words(
        "niemals, nie, immer, stets, nicht, kein, keine, keinen, keinem, keiner, keinesfalls, "
        "auf keinen fall, muss, musst, müssen, müsst, darf, darfst, dürfen, dürft, verboten, "
        "unbedingt, ausschließlich, nur, vermeide, vermeiden, stelle sicher, stell sicher, "
        "stellen sie sicher, achte darauf, bevorzuge"
    ),
    cue=r"[äöüß]|(?<![\w-])(?:der|das|und|nicht|ein|eine|mit|für|auf|zu)(?![\w-])",
    instructions=words("niemals, immer, muss, müssen, darf, verboten, unbedingt, stelle sicher, vermeide"),
    letters=r"[äöüß]",
    old_before=words("nicht, statt, anstatt, anstelle von, nicht mehr, kein, keine, keinen"),
)
