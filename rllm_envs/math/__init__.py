r"""Math problems with a fast, exact answer grader (``rllm/Math-v0``).

The grader (:mod:`rllm_envs.math.grader`) and the procedural generators
(:mod:`rllm_envs.math.generators`) are plain modules with no Gymnasium import::

    from rllm_envs.math import is_equivalent, score_response

    is_equivalent("\\dfrac{1}{2}", "0.5")              # True
    score_response("... so \\boxed{x = 3}.", "3")      # (1.0, "correct")
"""

from rllm_envs.math.generators import FAMILIES, procedural_tasks
from rllm_envs.math.grader import (
    DEFAULT_TIMEOUT,
    Verdict,
    compare,
    extract_answer,
    is_equivalent,
    normalize,
    score_response,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "FAMILIES",
    "Verdict",
    "compare",
    "extract_answer",
    "is_equivalent",
    "normalize",
    "procedural_tasks",
    "score_response",
]
