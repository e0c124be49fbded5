"""Spanish: "nunca borres la base de datos", "700, no 500" ("no" counts only in Spanish text)."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="es",
    rules=words(
        "nunca, jamás, siempre, no debes, no debe, debes, deben, tienes que, tiene que, hay que, "
        "obligatorio, prohibido, asegúrate, asegurate, evitar, sólo, solamente, únicamente, "
        "prefiero, prefiere, por favor no"
    ),
    gated=words("no, evita, solo"),
    cue=(
        r"[ñ¿¡áéíóú]|(?<![\w-])(?:el|los|las|del|una|que|para|esto|esta|este|nada|archivo|rama|cambios|"
        r"pero|porque|ahora|base de datos)(?![\w-])"
    ),
    instructions=words("nunca, jamás, siempre, debes, debe, obligatorio, prohibido, asegúrate, evitar"),
    letters=r"[ñáéíóú¿¡]",
    old_before=words("en lugar de, en vez de, y no, ya no es, ya no son, ya no está"),
    old_before_gated=words("no"),
)
