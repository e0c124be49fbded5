"""French: "ne jamais pousser sur main", "700 €, pas 500 €", "au lieu de db1.internal"."""

from sessionstore.summary.languages import Language

LANGUAGE = Language(
    code="fr",
    rules=(
        r"jamais|toujours|ne\s+(?:[\w'’-]+\s+){0,3}?(?:pas|jamais|plus|rien)|n['’]\w+\s+(?:pas|jamais|plus|rien)",
        r"il (?:ne )?faut|tu dois|vous devez|on doit|doit|doivent|interdite?|obligatoire",
        r"assure-toi|assurez-vous|évite|évitez|éviter|uniquement|seulement|je préfère|préfère|préférez",
    ),
    cue=(r"[àâçéèêëîïôûùüÿœ]|(?<![\w-])(?:le|la|les|des|du|et|pour|une|sur|avec|dans|c['’]est)(?![\w-])"),
    old_before=r"pas|et non|au lieu d[e'’]|plutôt que|ne (?:[\w'’-]+ ){0,2}plus",
    old_before_gated=r"non|plus",
    instructions=(
        "jamais",
        "toujours",
        "doit",
        "doivent",
        "il faut",
        "interdit",
        "obligatoire",
        "assurez-vous",
        "évitez",
    ),
    letters=r"[àâçéèêëîïôûùœ]",
)
