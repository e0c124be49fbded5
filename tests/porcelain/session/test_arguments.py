"""What callers hand a Session is refused in one line, before anything is written."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pydantic_ai.usage import RequestUsage, RunUsage

from helpers.messages import tagged_turn
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.session.arguments import check_focus, check_messages, usage_dict
from sessionstore.porcelain.store import SessionStore


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "locks" not in p.parts)


def test_usage_keeps_the_non_zero_counts() -> None:
    stored = usage_dict(RunUsage(input_tokens=5, output_tokens=2, details={"reasoning": 1}))
    assert stored == {"input_tokens": 5, "output_tokens": 2, "details": {"reasoning": 1}}
    assert usage_dict(RequestUsage(input_tokens=5)) == {"input_tokens": 5}
    assert usage_dict({"input_tokens": 1.5}) == {"input_tokens": 1.5}


def test_usage_keeps_the_cost_pydantic_ai_prices_as_a_number() -> None:
    # A priced model's RunUsage carries `cost` as a Decimal: a real run must not be refused for it.
    stored = usage_dict(RunUsage(input_tokens=31, output_tokens=5, cost=Decimal("0.00000465")))
    assert stored == {"input_tokens": 31, "output_tokens": 5, "cost": 4.65e-06}
    assert usage_dict(RunUsage(input_tokens=3, cost=Decimal(0))) == {"input_tokens": 3}
    with pytest.raises(SessionStoreError, match="usage field 'cost'"):
        usage_dict({"cost": Decimal("-1")})


@pytest.mark.parametrize("usage", [{"input_tokens": "x"}, {"input_tokens": -3}, {"output_tokens": True}])
def test_usage_that_is_not_a_count_is_refused(usage: dict) -> None:
    key = next(iter(usage))
    with pytest.raises(SessionStoreError, match=f"usage field '{key}'") as err:
        usage_dict(usage)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (None, "not NoneType"),
        ("hello", "not str"),
        ({"kind": "request"}, "not dict"),
        (5, "not int"),
        ([], "nothing to append"),
        (["not a message"], "got str"),
    ],
)
def test_messages_that_are_not_a_list_of_messages_are_refused(messages: object, expected: str) -> None:
    with pytest.raises(SessionStoreError, match=expected):
        check_messages(messages)  # type: ignore[arg-type]


def test_one_message_instead_of_a_list_says_to_wrap_it() -> None:
    with pytest.raises(SessionStoreError, match=r"got one ModelRequest: pass \[message\]"):
        check_messages(tagged_turn(0, 0)[0])  # type: ignore[arg-type]


def test_any_iterable_of_messages_is_accepted() -> None:
    turn = tagged_turn(0, 0)
    assert check_messages(iter(turn)) == turn and check_messages(tuple(turn)) == turn


def test_focus_must_be_text() -> None:
    assert check_focus(None) is None and check_focus("auth") == "auth"
    with pytest.raises(SessionStoreError, match="focus must be text"):
        check_focus(5)


def test_a_refused_append_or_compact_writes_nothing(store: SessionStore) -> None:
    session = store.session("s")
    session.append(tagged_turn(0, 0))
    before = _files(store.root)
    for bad in (
        lambda: session.append(tagged_turn(1, 0), usage={"input_tokens": "12"}),  # not even a blob
        lambda: session.append(tagged_turn(1, 0)[0]),  # type: ignore[arg-type]
        lambda: session.append(None),  # type: ignore[arg-type]
        lambda: session.compact(focus=["auth"]),  # type: ignore[arg-type]
    ):
        with pytest.raises(SessionStoreError):
            bad()
    assert _files(store.root) == before
    assert session.persisted_count == len(store.session("s").history) == len(tagged_turn(0, 0))
