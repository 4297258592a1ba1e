"""The agent-facing spec of ``rllm/SWE-v0`` as plain data (no Gymnasium import).

The first observation is self-contained (the issue, the files, the tools, the call format
of :data:`CALL_FORMAT`), so a model with no chat template can work from it. The registry
row names :data:`SPEC`.
"""

from __future__ import annotations

from rllm_envs.demonstrations import Demonstration
from rllm_envs.spec import AgentSpec

__all__ = [
    "CALL_FORMAT",
    "SYSTEM_PROMPT",
    "DEMONSTRATION",
    "SWE_DEMONSTRATION",
    "STOP",
    "MAX_TOKENS",
    "SPEC",
]

#: How to act, shown in the first observation.
CALL_FORMAT = (
    "Act by calling tools. Write each call as\n"
    '<tool_call>{"name": "read_file", "arguments": {"path": "<file>"}}</tool_call>\n'
    "(a JSON object with the tool's name and its arguments); each result comes back in the "
    "next message. Edit with replace (exact text), apply_patch (a unified diff) or "
    "create_file; run the tests with run_tests. When the issue is fixed, call submit: your "
    "changes are then checked by hidden tests. Changes to the tests themselves are not kept."
)

#: The family's system prompt.
SYSTEM_PROMPT = (
    "You fix issues in Python repositories. Read the relevant code, make the smallest "
    "correct change, run the tests, then submit. Call one tool per reply as "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call> and wait for its result.'
)

#: A worked first turn of an invented task (a function no embedded repository has).
DEMONSTRATION: tuple[dict[str, str], ...] = (
    {
        "role": "user",
        "content": "Fix the issue below in the repository `greeter`.\n\nIssue:\n"
        "`greet('Ann')` returns 'Hello, ann' but it should return 'Hello, Ann'.\n\n"
        "Files:\ngreeter/__init__.py\ngreeter/hello.py\ntests/test_hello.py",
    },
    {
        "role": "assistant",
        "content": '<tool_call>{"name": "read_file", "arguments": {"path": '
        '"greeter/hello.py"}}</tool_call>',
    },
)

#: The worked example as the env knows it: a reply that copies it earns nothing and is
#: flagged (``info["copied_demonstration"] == "swe"``).
SWE_DEMONSTRATION = Demonstration("swe", DEMONSTRATION)

#: Replies end at the end of a call: one call per reply.
STOP: tuple[str, ...] = ("</tool_call>",)

#: Most tokens of one reply (a diff or a replaced block fits).
MAX_TOKENS = 1024

#: The spec the registry row names: the shared tool turn logic passes ``info["tools"]`` to
#: the chat template.
SPEC = AgentSpec(
    turns="tool",
    system_prompt=SYSTEM_PROMPT,
    demonstration=DEMONSTRATION,
    max_tokens=MAX_TOKENS,
    stop=STOP,
)
