"""The agent-facing spec of the code envs (:class:`rllm_envs.spec.AgentSpec`).

The system prompt follows the task's language and kind (``info["language"]``,
``info["kind"]``) so it never contradicts the task text: ``"stdin"`` asks for a complete
program reading standard input and writing standard output, ``"functional"`` for the named
function or class that *returns* the answer, ``"assert"`` for the code hidden tests call.
"""

from __future__ import annotations

from rllm_envs.spec import AgentSpec

__all__ = ["SPEC"]

_HEAD = "You are a competitive programmer. "
_LANGUAGES = {"python": ("Python 3", "python"), "cpp": ("C++17", "cpp")}


def _prompts(label: str, fence: str) -> dict[str, str]:
    return {
        "stdin": _HEAD
        + f"Reply with one complete {label} program in a ```{fence} code block. The program "
        "reads the input from standard input and writes the answer to standard output.",
        "functional": _HEAD
        + f"Reply with the {label} function or class the task names, complete with any "
        f"imports, in a ```{fence} code block. It returns the answer: it does not print it "
        "and does not read input.",
        "assert": _HEAD
        + f"Reply with the {label} code the task asks for in a ```{fence} code block; hidden "
        "tests will call it.",
    }


SPEC = AgentSpec(
    system_prompt=_HEAD
    + "Write the code the task asks for, in the form it asks for, in one fenced code block.",
    max_tokens=512,
    select=("language", "kind"),
    system_prompts={
        f"{language}/{kind}": prompt
        for language, (label, fence) in _LANGUAGES.items()
        for kind, prompt in _prompts(label, fence).items()
    },
)
