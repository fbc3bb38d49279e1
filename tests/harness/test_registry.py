"""The one tool registry: one declaration gives the provider schema, the usage line and the
validation of a model's arguments, for pydantic-declared and raw-JSON-Schema tools alike."""

from __future__ import annotations

import pytest
from pydantic import Field

from autodev.errors import ToolError
from autodev.harness.audit import VERDICT
from autodev.harness.catalog import BUILTIN
from autodev.harness.registry import Args, Integer, Number, Registry, String, Tool, ToolEnv


class EchoArgs(Args):
    text: String = Field(description="what to echo")
    times: Integer = Field(1, ge=1, description="how often")
    pause: Number | None = Field(None, gt=0, description="seconds")


def echo(env: ToolEnv, text: str, times: int, pause: float | None) -> str:
    return " ".join([text] * times) + (f" after {pause:g}s" if pause else "")


ECHO = Tool("echo", "Echo text.", "read", echo, args=EchoArgs, replay_safe=True)


def test_the_schema_is_built_once_and_each_caller_gets_its_own_copy():
    first = ECHO.spec()["function"]["parameters"]
    first["properties"]["times"]["minimum"] = 99  # a provider's adapter editing what it was given
    again = ECHO.spec()["function"]["parameters"]
    assert again["properties"]["times"]["minimum"] == 1 and again is not first


def test_schema_comes_from_the_model():
    spec = ECHO.spec()
    assert spec["type"] == "function" and spec["function"]["name"] == "echo"
    params = spec["function"]["parameters"]
    assert params["required"] == ["text"] and params["additionalProperties"] is False
    assert params["properties"]["times"] == {
        "default": 1,
        "description": "how often",
        "minimum": 1,
        "type": "integer",
    }
    # an optional argument is offered as its type, not as "type or null"
    assert params["properties"]["pause"] == {
        "type": "number",
        "description": "seconds",
        "exclusiveMinimum": 0,
    }
    assert ECHO.usage() == "echo(text: string, times?: integer = 1, pause?: number = None)"


def test_validation_accepts_numbers_as_strings_and_null_as_not_sent():
    assert ECHO.call(ToolEnv(), {"text": "a", "times": "2", "pause": " 1.5 "}) == "a a after 1.5s"
    assert ECHO.call(ToolEnv(), {"text": "a", "times": 3.0, "pause": None}) == "a a a"


@pytest.mark.parametrize(
    "args,message",
    [
        ({}, "echo: missing argument 'text' (string); usage: echo(text: string"),
        ({"text": 5}, "echo: argument 'text' must be a string, got 5; usage:"),
        ({"text": "a", "times": 0}, "echo: argument 'times' must be an integer >= 1, got 0"),
        ({"text": "a", "times": True}, "echo: argument 'times' must be an integer >= 1, got True"),
        ({"text": "a", "times": 1.5}, "argument 'times' must be an integer >= 1, got 1.5"),
        ({"text": "a", "pause": "soon"}, "echo: argument 'pause' must be a number > 0, got 'soon'"),
        ({"text": "a", "pause": 0}, "echo: argument 'pause' must be a number > 0, got 0"),
        ({"text": "a", "loud": True, "x": 1}, "echo: unknown argument(s) loud, x; usage:"),
        (["a"], "echo: arguments must be a JSON object; usage:"),
    ],
)
def test_bad_arguments_name_the_argument_and_the_usage(args, message):
    with pytest.raises(ToolError) as e:
        ECHO.call(ToolEnv(), args)
    assert message in str(e.value)


def test_a_raw_json_schema_tool_plugs_in_and_passes_its_arguments_through():
    schema = {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["owner"],
    }
    seen = {}
    tool = Tool(
        "gh__issues", "List issues.", "github", lambda env, **a: seen.update(a) or "ok", schema=schema
    )
    assert tool.spec()["function"]["parameters"] == schema
    assert tool.usage() == "gh__issues(owner: string, n?: integer = None)"
    assert tool.call(ToolEnv(), {"owner": "x", "extra": [1]}) == "ok"
    assert seen == {"owner": "x", "extra": [1]}  # its server checks them
    with pytest.raises(ToolError, match="gh__issues: arguments must be a JSON object"):
        tool.call(ToolEnv(), "owner=x")


def test_a_tool_declares_its_arguments_one_way():
    with pytest.raises(ValueError, match="not both"):
        Tool("x", "x", "read", echo)
    with pytest.raises(ValueError, match="not both"):
        Tool("x", "x", "read", echo, args=EchoArgs, schema={"type": "object"})


def test_names_are_unique_and_capabilities_come_from_the_tools():
    reg = Registry([ECHO], capabilities=["browser"])
    with pytest.raises(ValueError, match="declared twice"):
        reg.add(ECHO)
    assert reg.capabilities() == {"browser": frozenset(), "read": frozenset({"echo"})}
    assert reg.withheld(["read"]) == {"echo"} and reg.withheld(["browser", "nope"]) == frozenset()


def test_the_builtin_catalog():
    caps = BUILTIN.capabilities()
    assert caps["thread"] == {"post", "read_thread", "tell_user"}
    assert caps["read"] == {"read_file", "list_files", "search"}
    assert caps["write"] == {"write_file", "edit_file"}
    assert caps["commands"] == {"run_command"}
    assert caps["browser"] == {
        "browser_open",
        "browser_read",
        "browser_click",
        "browser_type",
        "browser_back",
        "browser_screenshot",
    }
    # the thread tools cannot be held: a turn must be able to post
    assert BUILTIN.holdable() == ["browser", "commands", "read", "write"]
    assert {t.name for t in BUILTIN if t.replay_safe} == {
        "read_file",
        "list_files",
        "search",
        "read_thread",
        "browser_read",
        "browser_screenshot",
    }
    post = BUILTIN.get("post").spec()["function"]["parameters"]
    assert post["required"] == ["kind", "text"]
    assert post["properties"]["kind"]["enum"] == ["say", "work_done", "handoff", "wait", "gate", "done"]


def test_verdict_is_declared_in_the_registry_style():
    assert VERDICT.call(ToolEnv(), {"accept": True}) == (True, "")
    assert VERDICT.call(ToolEnv(), {"accept": False, "gap": "no tests"}) == (False, "no tests")
    with pytest.raises(ToolError, match="verdict: argument 'accept' must be true or false, got 'yes'"):
        VERDICT.call(ToolEnv(), {"accept": "yes"})
    with pytest.raises(ToolError, match="verdict: missing argument 'accept' \\(boolean\\)"):
        VERDICT.call(ToolEnv(), {"gap": "x"})
