"""One agent step's reply read as a function call (the constrained JSON format).

Every backend is asked for a JSON object of ``call_schema()`` (``ChatRequest.json_output`` and
``json_schema``: a grammar on the embedded llama.cpp model, ``response_format: json_schema`` on
OpenAI-compatible servers, guided JSON on vLLM):
``{"thought": "...", "function": "<name>", "arguments": {...}}``. Native tool calls are not used: the
harness's chat interface has none; the schema carries the same functions and arguments. A reply
that is not such an object, names no known function, or whose arguments do not fit the function is
*malformed*: the loop counts it by kind and feeds the error back to the agent as a failed function
result, as MemGPT's loop does (``agent.py`` ``handle_ai_response``: a parse error or unknown function
becomes a "Failed" function response with a forced heartbeat).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# function -> (required arguments, optional arguments), each name -> type. ``request_heartbeat``
# (a boolean) is accepted by every function, as in the code.
FUNCTIONS: dict[str, tuple[dict[str, type], dict[str, type]]] = {
    "send_message": ({"message": str}, {}),
    "core_memory_append": ({"name": str, "content": str}, {}),
    "core_memory_replace": ({"name": str, "old_content": str, "new_content": str}, {}),
    "conversation_search": ({"query": str}, {"page": int}),
    "archival_memory_insert": ({"content": str}, {}),
    "archival_memory_search": ({"query": str}, {"page": int}),
}
HEARTBEAT = "request_heartbeat"
MALFORMED_KINDS = ("unparsed", "unknown_function", "bad_arguments")


def call_schema(functions: tuple[str, ...] | None = None) -> str:
    """The JSON Schema of one step's reply: a thought, a function name, and arguments of one of the
    functions' shapes (sent as ``ChatRequest.json_schema``; a backend that cannot constrain ignores
    it). The arguments are not tied to the named function in the schema (one branch per function
    through the whole reply multiplies a grammar's work on llama.cpp), so ``parse_call`` still checks
    them against the function and counts a mismatch as ``bad_arguments``. ``functions`` restricts the
    schema to those functions (the loop's forced final ``send_message``); None = all of them."""
    names = {str: "string", int: "integer"}
    allowed = list(FUNCTIONS) if functions is None else [f for f in FUNCTIONS if f in functions]
    if not allowed:
        raise ValueError(f"call_schema: none of {functions!r} is a function")
    shapes = []
    for name in allowed:
        required, optional = FUNCTIONS[name]
        props = {a: {"type": names[t]} for a, t in {**required, **optional}.items()}
        needed = list(required)
        if name != "send_message":  # the code's schemas require the flag on every other function
            props[HEARTBEAT] = {"type": "boolean"}
            needed.append(HEARTBEAT)
        shape = {
            "type": "object",
            "properties": props,
            "required": needed,
            "additionalProperties": False,
        }
        if shape not in shapes:  # the two searches take the same arguments
            shapes.append(shape)
    schema = {
        "type": "object",
        "properties": {  # in the order the model writes them: the thought before the call
            "thought": {"type": "string"},
            "function": {"enum": allowed},
            "arguments": {"anyOf": shapes},
        },
        "required": ["thought", "function", "arguments"],
        "additionalProperties": False,
    }
    return json.dumps(schema)


@dataclass
class Call:
    """A well-formed call: the function, its arguments (without the heartbeat flag) and the flag."""

    function: str
    arguments: dict[str, Any] = field(default_factory=dict)
    heartbeat: bool = False
    thought: str = ""


class Malformed(Exception):
    """The reply is not a usable call; ``kind`` is one of ``MALFORMED_KINDS``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _object(text: str) -> Any:
    """The JSON object in the reply; a model may wrap it in prose or a code fence."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise
        return json.loads(text[start : end + 1])


def _fits(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def parse_call(text: str) -> Call:
    """Read one reply as a call or raise ``Malformed`` naming what is wrong."""
    try:
        obj = _object(text)
    except json.JSONDecodeError:
        raise Malformed("unparsed", "the reply was not a JSON object") from None
    if not isinstance(obj, dict):
        raise Malformed("unparsed", "the reply was JSON but not an object")
    name = obj.get("function")
    if not isinstance(name, str) or name not in FUNCTIONS:
        known = ", ".join(FUNCTIONS)
        raise Malformed("unknown_function", f"no function named {name!r} (known: {known})")
    args = obj.get("arguments", {})
    if not isinstance(args, dict):
        raise Malformed("bad_arguments", f"the arguments of {name} must be a JSON object")
    args = dict(args)
    heartbeat = args.pop(HEARTBEAT, obj.get(HEARTBEAT))
    required, optional = FUNCTIONS[name]
    missing = [a for a in required if a not in args]
    unexpected = [a for a in args if a not in required and a not in optional]
    wrong = [
        a
        for a, v in args.items()
        if a in {**required, **optional} and not _fits(v, {**required, **optional}[a])
    ]
    if missing or unexpected or wrong:
        parts = [
            f"missing {', '.join(missing)}" if missing else "",
            f"unexpected {', '.join(unexpected)}" if unexpected else "",
            f"wrong type for {', '.join(wrong)}" if wrong else "",
        ]
        raise Malformed("bad_arguments", f"{name}: " + "; ".join(p for p in parts if p))
    thought = obj.get("thought")
    return Call(
        name,
        args,
        heartbeat=heartbeat is True,  # the code ignores a flag that is not a boolean
        thought=thought if isinstance(thought, str) else "",
    )
