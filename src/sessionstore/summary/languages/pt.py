"""Portuguese: "nunca apague o banco", "700, não 500"."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="pt",
    rules=words(
        "nunca, sempre, jamais, não, deve, devem, tem que, tem de, têm que, precisa, precisam, "
        "obrigatório, proibido, certifique-se, evite, evitar, apenas, somente, só, prefiro, "
        "prefere"
    ),
    cue=r"[ãõçáéíóúâêô]|(?<![\w-])(?:os|um|uma|não|para|com|do|dos|das)(?![\w-])",
    instructions=words("nunca, sempre, jamais, deve, devem, obrigatório, proibido, certifique-se, evite"),
    letters=r"[ãõçáéíóúâêô]",
    old_before=words("não, em vez de, ao invés de, no lugar de, não mais, e não"),
)
