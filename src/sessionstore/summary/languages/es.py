"""Spanish: "nunca borres la base de datos", "700, no 500" ("no" counts only in Spanish text)."""

from sessionstore.summary.languages import Language

LANGUAGE = Language(
    code="es",
    rules=(
        r"nunca|jamás|siempre|no debes|no debe|debes|deben|tienes que|tiene que|hay que",
        r"(?:es |está )?obligatorio|(?:está )?prohibido|asegúrate|asegurate|evitar|sólo|solamente",
        r"únicamente|prefiero|prefiere|por favor,? no",
    ),
    gated=(r"no\s+(?:(?:lo|la|los|las|le|les|me|te|nos|se)\s+)?\w+(?:es|as)", r"evita|solo"),
    cue=(
        r"[ñ¿¡áéíóú]|(?<![\w-])(?:el|los|las|del|una|que|para|esto|esta|este|nada|archivo|rama|cambios|"
        r"pero|porque|ahora|base de datos)(?![\w-])"
    ),
    old_before=r"en (?:lugar|vez) de|y no|ya no (?:es|son|está)",
    old_before_gated=r"no",
    instructions=(
        "nunca",
        "jamás",
        "siempre",
        "debes",
        "debe",
        "obligatorio",
        "prohibido",
        "asegúrate",
        "evitar",
        "evita",
    ),
    letters=r"[ñáéíóú¿¡]",
)
