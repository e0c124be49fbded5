"""Italian: "non toccare il ramo main", "700 €, invece di 500 €" ("non", "mai" only in Italian text)."""

from sessionstore.summary.languages import Language

LANGUAGE = Language(
    code="it",
    rules=(
        r"devi|deve|dovete|bisogna|(?:è )?obbligatorio|(?:è )?vietato|assicurati|assicuratevi",
        r"soltanto|solamente|preferisco|preferisce|per favore,? non",
    ),
    gated=(
        r"non\s+(?:(?:lo|la|li|le|ne|si|ci|mi|ti)\s+)?\w+(?:are|ere|ire)(?:lo|la|li|le|ne)?",
        r"mai|evita",
    ),
    cue=(
        r"[àèìòù]|(?<![\w-])(?:il|lo|gli|della|delle|dei|che|una|questo|questa|niente|codice|ramo|"
        r"modifiche|adesso|sul|sulla|nel|nella|sempre|soltanto)(?![\w-])"
    ),
    old_before=r"invece di|anziché|piuttosto che|non più|e non",
    old_before_gated=r"non",
    instructions=("mai", "sempre", "devi", "deve", "obbligatorio", "vietato", "assicurati", "evita"),
    letters=r"[àèìòù]",
)
