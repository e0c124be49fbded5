"""The extraction's data (summary/items.py): what is current, what replaced what, which files are gone.

What callers (render.py, check.py) rely on: `Extraction.add` derives an item's values and subject
from its text; `current`/`superseded` split the items by the superseded mark; `Item.successor` follows
`replaced_by` to the item that is current now; `retired_files` lists, in order of first mention, the
paths a user retired and the paths only superseded items state.
"""

from __future__ import annotations

from sessionstore.summary.items import Extraction


def test_add_derives_values_and_subject_and_numbers_items_in_order() -> None:
    ex = Extraction()
    first = ex.add("fact", "The  budget cap\nis $500.", "user")
    second = ex.add("constraint", "Never push to main.", "user")
    assert (first.text, first.values, first.subject) == ("The budget cap is $500.", ("$500",), "budget cap")
    assert (first.order, second.order) == (1, 2) and second.values == ()


def test_current_and_superseded_split_by_the_mark_and_successor_follows_the_chain() -> None:
    ex = Extraction()
    a = ex.add("fact", "The budget cap is $500.", "user")
    b = ex.add("fact", "The budget cap is $600.", "user")
    c = ex.add("fact", "The budget cap is $700.", "user")
    a.superseded, a.replaced_by = True, b  # as resolve links them when b came first
    b.superseded, b.replaced_by = True, c
    assert ex.current("fact") == [c] and ex.superseded() == [a, b]
    assert a.successor() is c and b.successor() is c and c.successor() is None
    c.superseded, c.replaced_by = True, a  # a cycle never loops
    assert a.successor() in (a, b, c)


def test_retired_files_are_the_users_retired_paths_and_superseded_values_in_mention_order() -> None:
    ex = Extraction()
    ex.files += ["src/a.py", "config/old.toml", "src/b.py", "config/new.toml", "src/c.py"]
    old = ex.add("fact", "The config file is config/old.toml.", "user")
    new = ex.add("fact", "Correction: the config file is config/new.toml.", "user")
    old.superseded, old.replaced_by = True, new
    ex.retired += ["src/b.py", "src/a.py", "src/unmentioned.py"]  # not in files: not this part's
    assert ex.retired_files() == ["src/a.py", "config/old.toml", "src/b.py"]
    ex.add("fact", "The backup config file is config/old.toml.", "user")  # still current elsewhere
    assert ex.retired_files() == ["src/a.py", "src/b.py"]


def test_replacement_follows_renames_and_corrections_to_the_path_current_now() -> None:
    ex = Extraction()
    ex.files += ["src/a.py", "src/b.py", "src/c.py", "config/old.toml", "config/new.toml", "src/gone.py"]
    ex.retired += ["src/a.py", "src/b.py", "src/gone.py"]
    ex.moved.update({"src/a.py": "src/b.py", "src/b.py": "src/c.py"})  # a -> b, then b -> c
    old = ex.add("fact", "The config file is config/old.toml.", "user")
    new = ex.add("fact", "Correction: the config file is config/new.toml.", "user")
    old.superseded, old.replaced_by = True, new
    assert ex.replacement("src/a.py") == "src/c.py" and ex.replacement("src/b.py") == "src/c.py"
    assert ex.replacement("config/old.toml") == "config/new.toml"
    assert ex.replacement("src/gone.py") is None and ex.replacement("src/c.py") is None
    ex.retired.append("src/c.py")
    ex.moved["src/c.py"] = "src/a.py"  # a cycle never loops
    assert ex.replacement("src/a.py") in ("src/a.py", "src/b.py", "src/c.py")
