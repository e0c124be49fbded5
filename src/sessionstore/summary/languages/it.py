"""Italian: "non toccare il ramo main", "700 €, invece di 500 €" ("non", "mai" only in Italian text)."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="it",
    rules=words(
        "devi, deve, dovete, bisogna, obbligatorio, vietato, assicurati, assicuratevi, soltanto, "
        "solamente, preferisco, preferisce, per favore non, non devi"
    ),
    gated=words("non, mai, evita, sempre"),
    cue=(
        r"[àèìòù]|(?<![\w-])(?:il|lo|gli|della|delle|dei|che|una|questo|questa|niente|codice|ramo|"
        r"modifiche|adesso|sul|sulla|nel|nella|sempre|soltanto)(?![\w-])"
    ),
    instructions=words("mai, sempre, devi, deve, obbligatorio, vietato, assicurati, evita"),
    letters=r"[àèìòù]",
    old_before=words("invece di, anziché, piuttosto che, non più, e non"),
    old_before_gated=words("non"),
)
