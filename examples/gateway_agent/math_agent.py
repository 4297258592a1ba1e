"""A math agent that knows nothing of rllm-envs: it only talks to an OpenAI-compatible server.

Point ``base_url`` at any server -- a hosted model, vLLM, or the rllm gateway's session URL
(``http://127.0.0.1:8400/sessions/<id>/v1``), where every call it makes is recorded
token-exactly for training. Nothing here imports rllm-envs::

    python examples/gateway_agent/math_agent.py --base-url http://127.0.0.1:8400/v1 \
        --question "What is 3 + 4?"
"""

from __future__ import annotations

import argparse

from openai import OpenAI

SYSTEM_PROMPT = "You are a careful mathematician. Give the final answer in \\boxed{}."


def solve(
    question: str,
    *,
    base_url: str,
    api_key: str = "unused",
    model: str = "tiny",
    max_tokens: int = 32,
    temperature: float = 1.0,
) -> str:
    """Ask the model once and return its reply."""
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=2)
    reply = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ],
        max_tokens=max_tokens,
        temperature=temperature,
    )
    client.close()
    return reply.choices[0].message.content or ""


def main() -> None:
    """Command line: answer one question."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--question", required=True)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    print(
        solve(
            args.question,
            base_url=args.base_url,
            api_key=args.api_key,
            model=args.model,
            max_tokens=args.max_tokens,
        )
    )


if __name__ == "__main__":
    main()
