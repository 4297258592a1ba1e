"""``reward_mode="fraction"``: pass_fraction pays for hidden tests the prompt does not show.

The attack it closes: the public tests are the statement's examples, so a program that
prints their expected outputs for their inputs (and nothing else) earned the public share of
the tests: 0.30 over the 27 embedded stdin problems in Code-v0 and CodeMultiTurn-v1, against
0.044 for ``print(0)``. And the last turn's feedback after a failed example said whether the
hidden tests (run anyway in fraction mode) passed.
"""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

from rllm_envs.code.code_env import CodeEnv, embedded_tasks
from rllm_envs.code.judge import JudgeResult, TestResult, score, unseen_hidden_tests
from rllm_envs.error import InvalidEnvConfig

TASKS = embedded_tasks()
STDIN = [i for i, t in enumerate(TASKS) if t["kind"] == "stdin"]
FUNCTIONAL = [i for i, t in enumerate(TASKS) if t["kind"] == "functional"]
SUM = next(i for i, t in enumerate(TASKS) if t["title"] == "Sum of Numbers")
ENV_IDS = ("rllm/Code-v0", "rllm/CodeMultiTurn-v1")


def fenced(code: str, language: str = "python") -> str:
    return f"```{language}\n{code}\n```"


def copy_program(observation: str, task: dict) -> str:
    """What an attacker writes from the prompt: each shown example's output for its input.

    The examples are the task's public tests: the prompt shows them (checked for stdin
    tasks, so the attack uses nothing the policy does not see; a functional task's examples
    read ``nums = [2,7,11,15], target = 9``, the same values in another notation). Any other
    input gets no output.
    """
    if task["kind"] == "stdin":
        words = " ".join(observation.split())
        for test in task["public_tests"]:
            assert " ".join(test["input"].split()) in words
            assert " ".join(test["output"].split()) in words
        table = {" ".join(t["input"].split()): t["output"] for t in task["public_tests"]}
        return (
            "import sys\n"
            f"TABLE = {table!r}\n"
            "sys.stdout.write(TABLE.get(' '.join(sys.stdin.read().split()), ''))\n"
        )
    # Functional: the arguments' JSON lines -> the shown return value.
    table = {
        json.dumps([json.loads(line) for line in t["input"].splitlines()]): t["output"]
        for t in task["public_tests"]
    }
    return (
        "import json\n"
        f"TABLE = {table!r}\n"
        "class Solution:\n"
        f"    def {task['func_name']}(self, *args):\n"
        "        found = TABLE.get(json.dumps(list(args)))\n"
        "        return None if found is None else json.loads(found)\n"
    )


def play(env: gym.Env, reply: str) -> tuple[float, str, dict]:
    """Send ``reply`` until the episode ends: (return, last observation, last info)."""
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(reply)
        total += float(reward)
        done = terminated or truncated
    return total, obs, info


def make(env_id: str, **kwargs) -> gym.Env:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gym.make(env_id, reward_mode="fraction", **kwargs)


# --------------------------------------------------------------- (a) copies earn nothing


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_program_printing_the_examples_earns_nothing(env_id):
    """The copy passes every example (it is a working attack) and earns 0 (before: 0.3)."""
    env = make(env_id)
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        task = env.unwrapped.task
        reward, _, info = play(env, fenced(copy_program(obs, task)))
        assert info["public_verdicts"] == ["AC"] * len(task["public_tests"]), task["id"]
        assert reward == 0.0, (task["id"], info["reward_components"])
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_copies_of_the_examples_earn_nothing_on_any_embedded_task(env_id):
    """Every embedded task, stdin and functional: 0 (before: 0.30 over the stdin ones)."""
    env = make(env_id)
    earned = {}
    for index in STDIN + FUNCTIONAL:
        obs, _ = env.reset(options={"index": index})
        task = env.unwrapped.task
        reward, _, info = play(env, fenced(copy_program(obs, task)))
        assert info["public_verdicts"] == ["AC"] * len(task["public_tests"]), task["id"]
        earned[task["id"]] = reward
    assert sum(earned.values()) == 0.0, {k: v for k, v in earned.items() if v}
    env.close()


def test_copies_of_the_examples_earn_nothing_in_cpp():
    env = make("rllm/CodeCpp-v0")
    obs, _ = env.reset(options={"index": SUM})
    task = env.unwrapped.task
    cases = "".join(
        f'  if (key == "{" ".join(t["input"].split())}") std::cout << "{t["output"].strip()}\\n";\n'
        for t in task["public_tests"]
    )
    program = (
        "#include <iostream>\n#include <string>\nint main() {\n"
        '  std::string w, key;\n  while (std::cin >> w) key += (key.empty() ? "" : " ") + w;\n'
        + cases
        + "}\n"
    )
    reward, _, info = play(env, fenced(program, "cpp"))
    assert info["public_verdicts"] == ["AC", "AC"] and reward == 0.0
    env.close()


def test_the_scorer_pays_no_copy_of_the_examples():
    task = TASKS[SUM]
    copy = fenced(copy_program(task["question"], task))
    assert score(copy, task, reward_mode="fraction") == 0.0
    assert score(fenced(task["solution"]), task, reward_mode="fraction") == 1.0


# --------------------------------------------------------- (b) the reference earns 1.0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_reference_solution_earns_one(env_id):
    env = make(env_id)
    for index in (STDIN[0], SUM, FUNCTIONAL[0]):
        env.reset(options={"index": index})
        reward, obs, info = play(env, env.unwrapped.oracle_action())
        assert reward == 1.0 and info["is_correct"] and "Accepted" in obs
    env.close()


# ------------------------------------------------------ (c) a known share of hidden tests

# Reverse the input line, except on the given inputs (a wrong answer there). Not an echo:
# a task whose every hidden answer is its input is left out (an echo passes it).
_REVERSE_BUT = "s = input()\nprint('wrong' if s in {bad!r} else s[::-1])"


def reverse_task(hidden: int = 4) -> dict:
    return {
        "question": "Print the input line reversed.\n\nExample:\nInput:\np0\nOutput:\n0p",
        "kind": "stdin",
        "public_tests": [{"input": "p0\n", "output": "0p\n"}],
        "hidden_tests": [{"input": f"h{i}\n", "output": f"{i}h\n"} for i in range(hidden)],
        "solution": "print(input()[::-1])",
    }


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(
    ("bad", "share"),
    [(["h1"], 3 / 4), (["h0", "h3"], 2 / 4), (["p0"], 1.0), (["p0", "h2"], 3 / 4)],
)
def test_a_program_passing_some_hidden_tests_earns_that_share(env_id, bad, share):
    """The public test neither adds (``p0`` passed) nor takes away (``p0`` failed) reward."""
    env = make(env_id)
    env.reset(options={"task": reverse_task()})
    reward, _, info = play(env, fenced(_REVERSE_BUT.format(bad=bad)))
    assert reward == pytest.approx(share)
    assert info["reward_components"]["pass_fraction"] == pytest.approx(share)
    env.close()


def test_a_hidden_test_the_prompt_shows_is_not_paid():
    """A hidden test with a public test's input, or shown as an example in the statement
    (TACO/APPS records make only the first example public), never counts."""
    from rllm_envs.code.judge import unseen_hidden_tests

    task = reverse_task(hidden=3)
    task["question"] += "\n\nExample 2:\nInput:\nh2\nOutput:\n2h\n"
    task["hidden_tests"].append({"input": "  p0 \n", "output": "0p\n"})
    assert unseen_hidden_tests(task) == [0, 1]
    env = make("rllm/Code-v0")
    env.reset(options={"task": task})
    # Passes the public test and both shown hidden tests, fails h0: half of h0, h1.
    reward, *_ = play(env, fenced(_REVERSE_BUT.format(bad=["h0"])))
    assert reward == pytest.approx(1 / 2)
    env.close()


def test_hidden_pass_fraction_counts_unseen_hidden_tests_only():
    from rllm_envs.code.judge import hidden_pass_fraction

    task = reverse_task(hidden=2)
    verdicts = ["AC", "AC", "WA"]
    result = JudgeResult(results=[TestResult(v) for v in verdicts])
    assert result.fraction == pytest.approx(2 / 3)  # the flat count, public included
    assert hidden_pass_fraction(result, task) == pytest.approx(1 / 2)
    assert hidden_pass_fraction(result, task, all_or_nothing=True) == 0.0
    # Not one verdict per test of the task: nothing.
    assert hidden_pass_fraction(JudgeResult(results=result.results[:2]), task) == 0.0


def test_a_task_with_no_unseen_hidden_test_is_refused_under_either_reward():
    """Every test shown: only a copy could be paid, so the task is not played or scored."""
    task = reverse_task(hidden=0)
    for env in (make("rllm/Code-v0"), gym.make("rllm/Code-v0")):
        with pytest.raises(InvalidEnvConfig, match="hidden test"):
            env.reset(options={"task": task})
    for mode in ("fraction", "all"):
        assert score(fenced("print(input()[::-1])"), task, reward_mode=mode) == 0.0


def test_tasks_with_no_unseen_hidden_test_are_left_out_of_a_dataset(tmp_path, caplog):
    rows = [
        {
            "question_title": name,
            "question_content": "Print the input line reversed.",
            "question_id": name,
            "public_test_cases": json.dumps(
                [{"input": "p0\n", "output": "0p\n", "testtype": "stdin"}]
            ),
            "private_test_cases": json.dumps(
                [{"input": h, "output": h.strip()[::-1], "testtype": "stdin"} for h in hidden]
            ),
        }
        for name, hidden in (("kept", ["h1\n"]), ("copyable", ["p0 \n"]))
    ]
    path = tmp_path / "lcb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level("INFO", logger="rllm_envs.code"):
        env = CodeEnv(dataset=path, reward_mode="fraction")
    assert [env.tasks[i]["id"] for i in range(len(env.tasks))] == ["kept"]
    assert "1 of 2 tasks left out" in caplog.text
    # The default reward (all tests pass) would pay the copy too.
    default = CodeEnv(dataset=path).tasks
    assert [default[i]["id"] for i in range(len(default))] == ["kept"]
    path.write_text(json.dumps(rows[1]) + "\n")
    for mode in ("fraction", "all"):
        with pytest.raises(InvalidEnvConfig, match="hidden tests"):
            CodeEnv(dataset=path, reward_mode=mode)


# ----------------------------------------- (d) no hidden outcome after a failed example


def _wrong_on_example_two(hidden_right: bool) -> str:
    """Example 1 right, example 2 printed as ``WRONG``; the hidden tests all right (the
    reference) or all wrong (``0``). Same public verdicts and outputs either way."""
    task = TASKS[SUM]
    first, second = (" ".join(t["input"].split()) for t in task["public_tests"])
    rest = "print(sum(map(int, data.split()[1:])))" if hidden_right else "print(0)"
    return (
        "import sys\ndata = sys.stdin.read()\nkey = ' '.join(data.split())\n"
        f"if key == {second!r}:\n    print('WRONG')\n"
        f"elif key == {first!r}:\n    print({task['public_tests'][0]['output'].strip()!r})\n"
        f"else:\n    {rest}\n"
    )


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [("rllm/Code-v0", {}), ("rllm/CodeMultiTurn-v1", {"max_turns": 2})],
)
def test_feedback_after_a_failed_example_says_nothing_of_the_hidden_tests(env_id, kwargs):
    """The last (or only) turn runs the hidden tests after a failed example; its feedback is
    the same whether they passed or not (before: "Hidden tests: passed.")."""
    env = make(env_id, **kwargs)
    seen = {}
    for hidden_right in (True, False):
        env.reset(options={"index": SUM})
        program = fenced(_wrong_on_example_two(hidden_right))
        reward, obs, info = play(env, program)
        assert info["public_verdicts"] == ["AC", "WA"] and info["hidden_passed"] is None
        assert "Hidden tests: not reported" in obs and "passed." not in obs
        seen[hidden_right] = (reward, obs)
    # The reward tells them apart (hidden tests are what it pays for); the feedback does not.
    assert seen[True][0] == 1.0 and seen[False][0] < 1.0
    assert seen[True][1] == seen[False][1]
    env.close()


def test_feedback_once_the_examples_pass_is_unchanged():
    env = make("rllm/Code-v0")
    env.reset(options={"task": reverse_task()})
    obs = play(env, fenced(_REVERSE_BUT.format(bad=["h1"])))[1]
    assert "Example tests: 1 accepted." in obs and "Hidden tests: not all passed." in obs
    env.close()


@pytest.mark.slow
def test_the_hacking_checks_example_lookup_earns_nothing_in_fraction_mode():
    """The checker's own lookup-examples policy (a program printing each shown example's
    output for its input) is judged on enough episodes to see the old 0.3 per stdin task
    (CodeCpp-v0: stdin tasks only; Python's copies are the tests above)."""
    from rllm_envs.testing import DEGENERATE_POLICIES, check_reward_hacking

    lookup = [p for p in DEGENERATE_POLICIES if getattr(p, "name", "") == "lookup-examples"]
    report = check_reward_hacking(
        "rllm/CodeCpp-v0", kwargs={"reward_mode": "fraction"}, policies=lookup, episodes=30
    )
    assert report.ok and report.results[0].mean_paid < 0.1


# ------------------------------------ (e) examples shown in any notation (s30 att30a)

_SUM_EXAMPLES = [("3\n1 2 3\n", "6\n"), ("2\n10 -4\n", "6\n"), ("4\n1 1 1 1\n", "4\n")]


def _shown(fmt: str, given: str, expected: str, k: int) -> str:
    i, o = given.strip(), expected.strip()
    return {
        "pre": f"<h3>Example {k}</h3><pre>{i}</pre><p>Output</p><pre>{o}</pre>\n",
        "latex": f"Example {k}: input $" + i.replace("\n", "$\\\\ $") + f"$, output ${o}$.\n",
        "table": "| " + i.replace("\n", "<br>") + f" | {o} |\n",
        "oneline": f"Input: {i.replace(chr(10), ' ')} Output: {o}\n",
        "names": f"Example {k}: n = {i.split()[0]}, a = [{', '.join(i.split()[1:])}] -> {o}\n",
        "quoted": f'Example {k}: input "{i}" gives output "{o}".\n',
        "output-first": f"Example {k}: the answer is {o} for the input\n{i}\n",
        "long-gap": f"Example {k}\nInput\n{i}\nHere we add up all the numbers:\nOutput\n{o}\n",
        "period": f"Example {k}\nInput\n{i}\nOutput\n{o}.\n",
    }[fmt]


@pytest.mark.parametrize(
    "fmt",
    ["pre", "latex", "table", "oneline", "names", "quoted", "output-first", "long-gap", "period"],
)
def test_hidden_tests_shown_as_examples_in_any_notation_are_seen(fmt):
    """A record (TACO, APPS, PrimeIntellect) whose hidden tests are only its statement's
    examples: a copy of the examples would pass, so the task has no unseen test (and is left
    out, or scores 0)."""
    question = "Given n integers, print their sum.\n\n" + "".join(
        _shown(fmt, i, o, k) for k, (i, o) in enumerate(_SUM_EXAMPLES, 1)
    )
    first, *rest = _SUM_EXAMPLES
    task = {
        "question": question,
        "kind": "stdin",
        "public_tests": [{"input": first[0], "output": first[1]}],
        "hidden_tests": [{"input": i, "output": o} for i, o in rest],
    }
    assert unseen_hidden_tests(task) == []
    assert score(fenced("input(); print(sum(map(int, input().split())))"), task) == 0.0
    # The same statement with a hidden test it does not show: that one is unseen.
    task["hidden_tests"].append({"input": "2\n5 5\n", "output": "10\n"})
    assert unseen_hidden_tests(task) == [2]


def test_a_reserialised_public_input_and_a_shown_constant_are_seen():
    # A functional hidden test that is a public one with other spacing.
    task = {
        "question": "Return the sum of nums.",
        "kind": "functional",
        "public_tests": [{"input": "[1,2,3]", "output": "6"}],
        "hidden_tests": [{"input": "[1, 2, 3]", "output": "6"}, {"input": "[4, 5]", "output": "9"}],
    }
    assert unseen_hidden_tests(task) == [1]
    # Every unseen test expects the answer an example shows: print("YES") passes them all.
    task = reverse_task()
    task["public_tests"] = [{"input": "1 2\n", "output": "YES\n"}]
    task["hidden_tests"] = [{"input": f"{n} {n + 5}\n", "output": "YES\n"} for n in range(4)]
    assert unseen_hidden_tests(task) == []
    task["hidden_tests"].append({"input": "9 1\n", "output": "NO\n"})
    assert unseen_hidden_tests(task) == [0, 1, 2, 3, 4]


def test_a_small_hidden_test_near_a_header_number_stays_unseen():
    """Header numbers ("Sample Input 2") next to one-number tests are not an example."""
    question = (
        "Given N, print the number of its divisors.\n\nSample Input 1\n\n49\n\n"
        "Sample Output 1\n\n3\n\nSample Input 2\n\n16\n\nSample Output 2\n\n5\n"
    )
    task = {
        "question": question,
        "kind": "stdin",
        "public_tests": [{"input": "49\n", "output": "3\n"}],
        "hidden_tests": [{"input": "2\n", "output": "2\n"}, {"input": "12\n", "output": "6\n"}],
    }
    assert unseen_hidden_tests(task) == [0, 1]


def test_a_positive_invalid_action_weight_is_refused():
    with pytest.raises(InvalidEnvConfig, match="invalid_action"):
        gym.make("rllm/Code-v0", reward_weights={"invalid_action": 1.0})
    gym.make("rllm/Code-v0", reward_weights={"invalid_action": -0.1}).close()


# ----------------------------- (f) constants a program can print (s30 att30b)


def _task(question: str, public: list, hidden: list) -> dict:
    return {
        "question": question,
        "kind": "stdin",
        "public_tests": [{"input": i, "output": o} for i, o in public],
        "hidden_tests": [{"input": i, "output": o} for i, o in hidden],
    }


def test_hidden_tests_one_constant_passes_have_no_unseen_test():
    question = "Find the fewest swaps turning s into t; print -1 if it is impossible.\n"
    public = [("3\nabc\nbca\n", "2\n")]
    # Every hidden test expects -1 (no example prints it; the statement names it).
    hidden = [(f"3\nab{c}\nxyz\n", "-1\n") for c in "cde"]
    assert unseen_hidden_tests(_task(question, public, hidden)) == []
    with pytest.raises(InvalidEnvConfig, match="constant"):
        gym.make("rllm/Code-v0").reset(options={"task": _task(question, public, hidden)})
    # One answer per case, all NO: printing NO once per case passes.
    per_case = [(f"{n}\n" + "1\n" * n, "NO\n" * n) for n in (2, 3, 4)]
    assert unseen_hidden_tests(_task("Answer YES or NO per case.", public, per_case)) == []
    # Numbers as the judge reads them: 0.5 and 0.50 are one answer.
    halves = [("1 2\n", "0.5\n"), ("2 4\n", "0.50\n")]
    assert unseen_hidden_tests(_task("Print a / b.", [("1 1\n", "1\n")], halves)) == []
    # A single hidden answer the prompt does not name is a guess: the task is kept.
    assert unseen_hidden_tests(
        _task("Print a + b.", [("1 1\n", "2\n")], [("20 22\n", "42\n")])
    ) == [0]
    # Two answers: kept.
    both = [*hidden, ("3\nabc\nacb\n", "1\n")]
    assert unseen_hidden_tests(_task(question, public, both)) == [0, 1, 2, 3]


def test_inputs_made_of_marks_are_compared_as_text():
    """Bracket strings and grids keep only their size numbers as tokens: compared as text, a
    hidden input of the examples' size is not counted as one of them."""
    question = (
        "Is the bracket string balanced? Print its depth, or 0.\n\nInput\n4\n(())\nOutput\n2\n"
    )
    public = [("4\n(())\n", "2\n")]
    hidden = [("4\n()()\n", "1\n"), ("4\n))((\n", "0\n"), ("6\n((()))\n", "3\n")]
    assert unseen_hidden_tests(_task(question, public, hidden)) == [0, 1, 2]
    # The example itself, among the hidden tests, is still seen (as text).
    assert unseen_hidden_tests(_task(question, [], [public[0], *hidden])) == [1, 2, 3]


# --------------------------- (g) calls, wrapped outputs, floats, empty outputs (s30 att30c)


def test_function_examples_written_as_calls_are_seen():
    """Codewars-style katas (TACO, APPS): examples as calls, strings with marks, outputs
    stored wrapped in a list; a hidden test repeating one is seen, a new one is not."""
    question = (
        "Return true if the order of the parentheses is valid.\n\n"
        '```\n"()"              =>  true\n")(()))"          =>  false\n'
        '"(())((()())())"  =>  true\n```\n\ncount("a?b?c", "?") == 2\n'
    )
    task = {
        "question": question,
        "kind": "functional",
        "public_tests": [{"input": '"()"', "output": "[true]"}],
        "hidden_tests": [
            {"input": '")(()))"', "output": "[false]"},
            {"input": '"(())((()())())"', "output": "[true]"},
            {"input": '"a?b?c"\n"?"', "output": "[2]"},
            {"input": '"hi(hi)()"', "output": "[true]"},
            {"input": '"hi())("', "output": "[false]"},
        ],
    }
    assert unseen_hidden_tests(task) == [3, 4]


def test_a_float_example_in_short_form_shows_its_long_answer():
    question = "Print a / b.\n\nInput\n7 4\n\nOutput\n1.75\n"
    task = _task(question, [("1 1\n", "1.000000000\n")], [("7 4\n", "1.750000000\n")])
    task["hidden_tests"].append({"input": "10 3\n", "output": "3.333333333\n"})
    assert unseen_hidden_tests(task) == [1]


def test_hidden_tests_expecting_no_output_have_no_unseen_test():
    """An empty program passes them (an interactive task stored with empty outputs)."""
    question = "This is an interactive problem: guess x by asking queries."
    assert unseen_hidden_tests(_task(question, [("1\n", "\n")], [("5\n", ""), ("9\n", "")])) == []
    assert unseen_hidden_tests(_task(question, [("1\n", "2\n")], [("5\n", "")])) == []


@pytest.mark.parametrize(
    ("question", "given", "expected"),
    [
        ('shout("café") == "CAFÉ"', '"caf\\u00e9"', '"CAF\\u00c9"'),  # escaped non-ASCII
        ('first_dup("abc") == None', '"abc"', "null"),  # JSON null for Python's None
        ("pattern(3) returns\n1\n22\n333", "3", '"1\\n22\\n333"'),  # a drawn multi-line string
        ("Input: n = 10, a = 2, b = 3, c = 4, d = 5\nOutput: 14", "10\n2\n3\n4\n5", "14"),
        ("area(4, 5) == 20", "4.0\n5.0", "20.0"),  # floats stored as 4.0, written 4
    ],
)
def test_functional_examples_stored_as_json_are_seen(question, given, expected):
    """TACO/PrimeIntellect store a functional test's arguments and result as JSON lines
    (s30 att30d): decoded, they are the statement's example."""
    task = {
        "question": question,
        "kind": "functional",
        "public_tests": [{"input": '"zz"\n1', "output": "0"}],
        "hidden_tests": [{"input": given, "output": expected}],
    }
    assert unseen_hidden_tests(task) == []


# ------------------ (h) outputs and cases copied from the examples, cost (s30 att30e)


def test_tests_made_of_the_examples_or_one_whole_output_have_no_unseen_test():
    # Every unseen test expects the example's whole two-line output: printing it passes.
    question = "Split the class into two teams. Print YES and the size, or NO."
    public = [("4\n1 2 3 4\n", "YES\n2\n")]
    hidden = [("6\n1 2 3 4 5 6\n", "YES\n2\n"), ("2\n7 9\n", "YES\n2\n")]
    assert unseen_hidden_tests(_task(question, public, hidden)) == []
    # Cases of the example, reordered and repeated: a per-case lookup passes.
    cases = _task("For each case print a mod b.", [("2\n7 3\n9 4\n", "1\n1\n")], [])
    cases["public_tests"][0]["output"] = "1\n1\n"
    cases["hidden_tests"] = [
        {"input": "3\n9 4\n7 3\n9 4\n", "output": "1\n1\n1\n"},
        {"input": "1\n10 4\n", "output": "2\n"},
    ]
    assert unseen_hidden_tests(cases) == [1]
    # The example's numbers reordered with the same answer (a sum): a sorted lookup passes.
    sums = _task("Print the sum.", [("3\n1 2 3\n", "6\n")], [("3\n3 2 1\n", "6\n")])
    sums["hidden_tests"].append({"input": "2\n5 8\n", "output": "13\n"})
    assert unseen_hidden_tests(sums) == [1]


def test_a_statement_too_long_to_search_leaves_no_unseen_test(monkeypatch):
    """Deciding what a client-written task's statement shows is bounded: the any-order match
    is linear (a 28 KB task cost 8.3 s of host CPU at reset with the quadratic one, 0.1 s now),
    and a statement over MAX_STATEMENT_TOKENS is not searched (the task is refused)."""
    from rllm_envs.code.judge import MAX_STATEMENT_TOKENS

    huge = _task("x " * (MAX_STATEMENT_TOKENS + 1), [("1\n", "2\n")], [("5 6\n", "11\n")])
    assert unseen_hidden_tests(huge) == []
    fine = _task("x " * 100, [("1\n", "2\n")], [("5 6\n", "11\n")])
    assert unseen_hidden_tests(fine) == [0]
    # Searching is bounded by statement tokens x hidden tests, and a repeated test is
    # searched once (s30 att30f: copies of one test cost 7 s each against a long statement).
    from rllm_envs.code import judge
    from rllm_envs.code.judge import MAX_SEARCH_WORK

    wide = _task("y " * 20_000, [("1\n", "2\n")], [])
    wide["hidden_tests"] = [{"input": f"{i}\n", "output": "3\n"} for i in range(300)]
    assert 20_000 * 300 > MAX_SEARCH_WORK and unseen_hidden_tests(wide) == []
    calls = []
    real = judge._shown_in
    monkeypatch.setattr(judge, "_shown_in", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(judge, "_UNSEEN_FOUND", {})  # searched here, not found earlier
    copies = _task("x " * 100, [("1\n", "2\n")], [("x\n", "y\n")] * 50 + [("5 6\n", "11\n")])
    assert unseen_hidden_tests(copies) == list(range(51)) and len(calls) == 2
    # JSON nested past Python's stack is read as text, not an error.
    fine["hidden_tests"].append({"input": "[" * 100_000 + "]" * 100_000, "output": "3\n"})
    assert unseen_hidden_tests(fine) == [0, 1]


# ------------------- (g) what a program without the task's logic passes is the floor (s31)

_PRIME = "n = int(input())\nprint('YES' if n > 1 and all(n % d for d in range(2, n)) else 'NO')"


def _prime_task() -> dict:
    numbers = [4, 6, 7, 9, 11, 15, 17, 21, 23, 25]  # 4 primes, 6 not
    hidden = [(f"{n}\n", "YES\n" if n in (7, 11, 17, 23) else "NO\n") for n in numbers]
    question = "Print YES if n is prime, else NO.\n\nExample:\nInput:\n2\nOutput:\nYES\n"
    return _task(question, [("2\n", "YES\n")], hidden)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(
    ("program", "reward"),
    [
        (_PRIME, 1.0),
        ("print('NO')", 0.0),  # 6 of 10 passed: what one fixed output passes
        ("print('YES')", 0.0),
        # Each answer is a guess (YES or NO): a program choosing by a feature of n passes as
        # many (att35g), odd and not a multiple of 3 here 9 of 10: only all of them pay.
        (_PRIME.replace("n = int(input())", "n = int(input())\nn = 7 if n in (9, 25) else n"), 0.0),
        ("n = int(input())\nprint('YES' if n % 2 and n % 3 else 'NO')", 0.0),
    ],
)
def test_the_fraction_is_paid_above_what_a_constant_passes(env_id, program, reward):
    """att31a: ``print("NO")`` earned 0.61 of a YES/NO dataset's fraction reward."""
    env = make(env_id)
    env.reset(options={"task": _prime_task()})
    got, _, info = play(env, fenced(program))
    assert got == pytest.approx(reward)
    env.close()


def test_the_trivial_share_counts_constants_echoes_and_an_input_word():
    from rllm_envs.code.judge import trivial_pass_share

    def tests(pairs):
        return [{"input": i, "output": o} for i, o in pairs]

    assert trivial_pass_share(tests([("1\n", "NO\n"), ("2\n", "NO\n"), ("3\n", "YES")])) == 2 / 3
    # 0.5 and 0.50 are one output, as the judge reads them.
    assert trivial_pass_share(tests([("a", "0.5"), ("b", "0.50"), ("c", "1"), ("d", "2")])) == 0.5
    # The larger of two numbers: the last word three times, the first once; a program may
    # choose between them (att35g), so every test counts.
    pairs = [("3 9\n", "9\n"), ("2 8\n", "8\n"), ("7 1\n", "7\n"), ("4 5\n", "5\n")]
    assert trivial_pass_share(tests(pairs)) == 1.0
    # Two guessable answers, each expected once: a program switching between them by a
    # feature of its input passes both (`0 if m == 0 else -1`).
    guessed = [("3 0\n", "0\n"), ("3 1\n1 2\n", "-1\n"), ("3 2\n1 2\n2 3\n", "5\n")]
    assert trivial_pass_share(tests(guessed), likely={("0",), ("-1",)}) == pytest.approx(2 / 3)
    mixed = [("5 1 2 3\n", "5\n"), ("4 2 1\n", "3\n"), ("6 9\n", "8\n")]
    assert trivial_pass_share(tests(mixed), likely={("3",)}) == pytest.approx(2 / 3)
    # Sorting: an already sorted input echoed.
    sort = [("1 2 3\n", "1 2 3\n"), ("3 1 2\n", "1 2 3\n"), ("2 1\n", "1 2\n")]
    assert trivial_pass_share(tests(sort)) == pytest.approx(2 / 3)  # "1 2 3" twice
    # An echo passes all: such a set is never paid (its task has no unseen test).
    assert trivial_pass_share(tests([("x\n", "x\n"), ("y\n", "y\n")])) == 1.0
    assert trivial_pass_share([]) == 0.0
    # One test's own answer is a guess, not a fixed output learnt across tests...
    assert trivial_pass_share(tests([("5 6\n", "11\n")])) == 0.0
    assert trivial_pass_share(tests([("1\n", "7\n"), ("2\n", "8\n")])) == 0.0
    # ... but picking an input word is no guess.
    assert trivial_pass_share(tests([("9 4\n", "9\n")])) == 1.0
    # One line per case (s31 att31c): NO once, twice and three times is one program's output.
    cases = [("1\n5\n", "NO\n"), ("2\n4\n9\n", "NO\nNO\n"), ("3\n1\n2\n3\n", "NO\nNO\nNO\n")]
    cases += [("1\n7\n", "YES\n"), ("2\n3\n8\n", "YES\nNO\n")]
    assert trivial_pass_share(tests(cases)) == 3 / 5
    # A line of the input echoed (s35 att35a: a shift of 0 answers the message line; a
    # grid's first row): one program per line, and the input without its first line.
    shift = [("52\nhello world\n", "hello world\n"), ("3\nabc\n", "def\n")]
    assert trivial_pass_share(tests(shift)) == 0.5
    rows = [("1 1\n1 1\n", "1 1\n"), ("2 2\n3 4\n", "7\n"), ("1 1\n9 9\n", "9 9\n")]
    assert trivial_pass_share(tests(rows)) == pytest.approx(2 / 3)  # the second line's
    body = [("2\n5\n6\n", "5\n6\n"), ("2\n1\n2\n", "3\n")]
    assert trivial_pass_share(tests(body)) == 0.5
    last = [("a\nb\nc\nd\ne\nf\n", "f\n"), ("x\ny\n", "y\n"), ("p\nq\n", "r\n")]
    assert trivial_pass_share(tests(last)) == pytest.approx(2 / 3)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_hidden_tests_an_input_word_passes_leave_no_unseen_test(env_id):
    """att31d: "print the larger of a and b" whose every hidden test has the larger first:
    printing the first word earned 1.0 in both modes (and a constant 0.25 in fraction mode,
    the floor switched off). Such a task has no unseen test: refused, or left out."""
    question = "Print the larger of a and b.\n\nExample:\nInput:\n3 8\nOutput:\n8\n"
    hidden = [(f"{a} {b}\n", f"{a}\n") for a, b in ((41, 7), (90, 12), (15, 3), (66, 65))]
    task = _task(question, [("3 8\n", "8\n")], hidden)
    assert unseen_hidden_tests(task) == []
    with pytest.raises(InvalidEnvConfig, match="hidden test"):
        make(env_id).reset(options={"task": task})
    # One hidden test with the larger last: a real test, the task is kept.
    task["hidden_tests"].append({"input": "2 9\n", "output": "9\n"})
    assert unseen_hidden_tests(task) == [0, 1, 2, 3, 4]


def test_a_constant_an_example_shows_is_floored_on_two_unseen_tests():
    """att31e: one YES and one NO unseen (each once): "examples, else YES" earned 0.5 in
    fraction mode, since a fixed output counted only when two tests expected it. An answer
    the examples show is one a program guesses: it counts once too."""
    from rllm_envs.code.judge import hidden_pass_fraction

    question = "Print YES if s is a palindrome, else NO.\n\nExample:\nInput:\naba\nOutput:\nYES\n"
    task = _task(question, [("aba\n", "YES\n")], [("abba\n", "YES\n"), ("abc\n", "NO\n")])
    assert unseen_hidden_tests(task) == [0, 1]
    for verdicts, paid in ((["AC", "AC", "WA"], 0.0), (["AC", "WA", "AC"], 0.0), (["AC"] * 3, 1.0)):
        result = JudgeResult(results=[TestResult(v) for v in verdicts])
        assert hidden_pass_fraction(result, task) == paid, verdicts
