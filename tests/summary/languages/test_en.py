"""English markers: rules, file instructions, imperatives, old values."""

from sessionstore.summary.languages import imperative_lines, instruction_lines, is_rule, names_old


def test_rules() -> None:
    assert is_rule("dont touch the prod db") and is_rule("Never exceed without explicit approval.")
    assert is_rule("the staging box is off-limits") and not is_rule("thanks, that looks great")


def test_file_lines() -> None:
    text = "# Setup\nYou must run make lint.\n- Keep PRs small.\nmustard is a condiment"
    assert instruction_lines(text) == ["You must run make lint."]
    assert imperative_lines(text) == ["- Keep PRs small."]


def test_old_value() -> None:
    s = "Actually it is $700, not the $500."
    assert names_old(s, s[: s.index("$500")], ".") and not names_old(s, s[: s.index("$700")], ", not")
