r"""Math problems with a fast, exact answer grader (``rllm/Math-v1``).

The grader (:mod:`rllm_envs.math.grader`), the procedural generators
(:mod:`rllm_envs.math.generators`) and the dataset loaders (:mod:`rllm_envs.math.loaders`) are
plain modules; the environment is :class:`rllm_envs.math.math_env.MathEnv`::

    from rllm_envs.math import format_issue, is_equivalent, score_response

    is_equivalent("\\dfrac{1}{2}", "0.5")              # True
    score_response("... so \\boxed{x = 3}.", "3")      # (1.0, "correct")
    score_response("\\boxed{3 + 4}", "7")               # (0.0, "not_final_form")
    score_response("The answer is $1{,}000$.", "1000", answer_format="any")  # lenient
    format_issue("\\boxed{42} \\times \\boxed{5}")   # "multiple_boxes"
"""

from rllm_envs.math.generators import FAMILIES, procedural_tasks
from rllm_envs.math.grader import (
    ANSWER_FORMATS,
    DEFAULT_TIMEOUT,
    FINAL_FORM_ISSUES,
    FORMAT_ISSUES,
    AnswerFormat,
    Verdict,
    compare,
    extract_answer,
    extract_answer_and_source,
    final_form_issue,
    format_issue,
    grade_answer,
    is_equivalent,
    is_placeholder,
    normalize,
    score_response,
    warm_up,
)
from rllm_envs.math.loaders import DATASET_FORMATS, load_math_tasks, math_dataset_tasks
from rllm_envs.math.math_env import ANSWER_FORMAT, MathEnv

__all__ = [
    "ANSWER_FORMAT",
    "ANSWER_FORMATS",
    "AnswerFormat",
    "FINAL_FORM_ISSUES",
    "FORMAT_ISSUES",
    "DATASET_FORMATS",
    "DEFAULT_TIMEOUT",
    "FAMILIES",
    "MathEnv",
    "Verdict",
    "compare",
    "extract_answer",
    "extract_answer_and_source",
    "final_form_issue",
    "format_issue",
    "grade_answer",
    "is_equivalent",
    "is_placeholder",
    "load_math_tasks",
    "math_dataset_tasks",
    "normalize",
    "procedural_tasks",
    "score_response",
    "warm_up",
]
