"""A user's own agent module for `session chat --agent` (issue 27): one tool, instructions, offline.

The model is a FunctionModel: asked anything, it calls `weather("Paris")`, then answers with what the
tool returned. `report` is the same agent with a structured output type; `recaller` only asks its
`recall` tool (given by `session chat --recall`).
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

INSTRUCTIONS = "You answer questions about the weather, and nothing else."


class Forecast(BaseModel):
    city: str
    sky: str


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returns = [p for p in messages[-1].parts if p.part_kind == "tool-return" and p.tool_name == "weather"]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("weather", {"city": "Paris"})])
    if info.output_tools:
        args = {"city": "Paris", "sky": str(returns[0].content)}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])
    return ModelResponse(parts=[TextPart(f"In Paris it is {returns[0].content}.")])


def remember(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks its `recall` tool (`session chat --recall`) for the words of the prompt, answers with the
    first line of what it got back."""
    last = messages[-1]
    back = [p for p in last.parts if p.part_kind == "tool-return" and p.tool_name == "recall"]
    if back:
        return ModelResponse(parts=[TextPart(str(back[0].content).splitlines()[1])])
    prompt = next(p.content for p in last.parts if p.part_kind == "user-prompt")
    return ModelResponse(parts=[ToolCallPart("recall", {"query": str(prompt)})])


agent = Agent(FunctionModel(reply), instructions=INSTRUCTIONS, name="weather-bot")
recaller = Agent(FunctionModel(remember), name="recaller")
report = Agent(FunctionModel(reply), instructions=INSTRUCTIONS, output_type=Forecast)
not_an_agent = 42


@agent.tool_plain
def weather(city: str) -> str:
    """The weather in `city` now."""
    return "sunny, 21 °C"


@report.tool_plain(name="weather")
def report_weather(city: str) -> str:
    """The weather in `city` now."""
    return "sunny, 21 °C"
