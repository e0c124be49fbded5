"""French: "ne jamais pousser sur main", "700 €, pas 500 €", "au lieu de db1.internal"."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="fr",
    rules=words(
        "jamais, toujours, ne pas, il faut, il ne faut, tu dois, vous devez, on doit, doit, "
        "doivent, interdit, interdite, obligatoire, assure-toi, assurez-vous, évite, évitez, "
        "éviter, uniquement, seulement, je préfère, préfère, préférez"
    ),
    gated=words("pas, plus, rien"),
    cue=r"[àâçéèêëîïôûùüÿœ]|(?<![\w-])(?:le|la|les|des|du|et|pour|une|sur|avec|dans|c['’]est)(?![\w-])",
    instructions=words(
        "jamais, toujours, doit, doivent, il faut, interdit, obligatoire, assurez-vous, évitez"
    ),
    letters=r"[àâçéèêëîïôûùœ]",
    old_before=words("pas, et non, au lieu de, au lieu d', plutôt que, ne plus"),
    old_before_gated=words("non, plus"),
)
