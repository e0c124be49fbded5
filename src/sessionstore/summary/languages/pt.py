"""Portuguese: "nunca apague o banco", "700, não 500"."""

from sessionstore.summary.languages import Language

LANGUAGE = Language(
    code="pt",
    rules=(
        r"nunca|sempre|jamais|não|deve|devem|tem que|tem de|têm que|precisa|precisam",
        r"(?:é )?obrigatório|proibido|certifique-se|evite|evitar|apenas|somente|só|prefiro|prefere",
    ),
    cue=r"[ãõçáéíóúâêô]|(?<![\w-])(?:os|um|uma|não|para|com|do|dos|das)(?![\w-])",
    old_before=r"não|em vez de|ao invés de|no lugar de|não mais|e não",
    instructions=(
        "nunca",
        "sempre",
        "jamais",
        "deve",
        "devem",
        "obrigatório",
        "proibido",
        "certifique-se",
        "evite",
    ),
    letters=r"[ãõçáéíóúâêô]",
)
