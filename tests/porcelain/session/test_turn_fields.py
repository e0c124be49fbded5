"""What a turn's line records beside its messages (porcelain/turn_fields.py): model, capacity, the
measured prefix and the calibration its usage taught, so `session gauge` reads one line."""

from __future__ import annotations

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.usage import RequestUsage

from sessionstore.accounting.calibration import Calibration
from sessionstore.accounting.thresholds import model_of
from sessionstore.porcelain.session.turn_fields import calibration_fields, context_fields, model_id


def turn(input_tokens: int = 0) -> list:
    usage = RequestUsage(input_tokens=input_tokens, output_tokens=7)
    return [
        ModelRequest(parts=[UserPromptPart("hi")]),
        ModelResponse(parts=[TextPart("hello")], usage=usage, model_name="gpt-4o", provider_name="openai"),
        ModelRequest(parts=[UserPromptPart("and?")]),
    ]


def test_the_model_its_capacity_and_the_measured_prefix() -> None:
    new = turn(1_000)
    assert model_of(new) == "openai:gpt-4o"
    fields = context_fields(new, [10, 10, 12], model_of(new), 30, measured=True)
    assert fields["model"] == "openai:gpt-4o" and fields["capacity"] > 0
    assert fields["measured"] == 1_000 + 7 + 12 + 30, "input + output + what follows + what tier 1 elided"
    assert "measured" not in context_fields(turn(0), [10, 10, 12], None, 0, measured=True)
    assert "measured" not in context_fields(new, [10, 10, 12], None, 0, measured=False), "an import's"
    assert model_id("anthropic:claude") == "anthropic:claude"


def test_the_calibration_a_response_teaches() -> None:
    old = Calibration({"other:model": 1.1})
    fields = calibration_fields(old, turn(1_300), "openai:gpt-4o", 1_000)
    assert fields == {"calibration": {"openai:gpt-4o": 1.3, "other:model": 1.1}}
    assert old.factors == {"other:model": 1.1}, "the session's own calibration is left to the line"
    assert calibration_fields(old, turn(0), "openai:gpt-4o", 1_000) == {}, "no usage, nothing learned"
    assert calibration_fields(old, turn(1_300), None, 1_000) == {}
