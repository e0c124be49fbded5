"""German: "niemals force-push", "Das Budget ist 700 €, nicht 500 €"."""

from sessionstore.summary.languages import Language

LANGUAGE = Language(
    code="de",
    rules=(
        r"niemals|nie|immer|stets|nicht|kein|keine|keinen|keinem|keiner|keinesfalls|auf keinen fall",
        r"muss|musst|müssen|müsst|darf|darfst|dürfen|dürft|verboten|unbedingt|ausschließlich|nur",
        r"vermeide|vermeiden|stelle sicher|stell sicher|stellen sie sicher|achte darauf|bevorzuge",
    ),
    cue=r"[äöüß]|(?<![\w-])(?:der|das|und|nicht|ein|eine|mit|für|auf|zu)(?![\w-])",
    old_before=r"nicht|statt|anstatt|anstelle von|nicht mehr|kein(?:e|en)?",
    instructions=(
        "niemals",
        "immer",
        "muss",
        "müssen",
        "darf",
        "verboten",
        "unbedingt",
        "stelle sicher",
        "vermeide",
    ),
    letters=r"[äöüß]",
)
