r"""Turn assert-style tests into functional tests whose verdict the host decides.

Assert-kind tests (HumanEval's ``check(candidate)``, MBPP's ``assert f(x) == y`` lines,
LeetCode's ``check(Solution().method)``, KodCode's pytest files) run inside the
submission's own interpreter, so a submission can disarm them (rebind a builtin, edit the
caller's frame): their verdict is only as trustworthy as that process. A functional test
is an input/output pair (:mod:`rllm_envs.code.datasets`): the sandbox returns the call's
value and the host compares it with the expected value, which never enters the sandbox.
:func:`convert_asserts` turns the first kind into the second wherever the meaning is kept:

=====================================  ===================================================
``assert f(args) == value``            expected ``value`` (also ``value == f(args)``)
``assert f(args)``                     expected ``True`` (``f(args) is True`` too)
``assert not f(args)``                 expected ``False`` (``f(args) is False`` too)
``check(candidate)`` bodies            ``candidate`` is the function under test
pytest ``test_*`` functions            ``from solution import f``: ``f`` is under test;
                                       ``@pytest.mark.parametrize`` is expanded
EvalPlus ``assertion(f(*inp), exp,     expected ``exp`` when ``atol`` is 0 and ``exp`` is
0)`` loops                             not a float (floats are compared with a tolerance)
=====================================  ===================================================

Two ways to get the expected values:

* **Literals, on the host.** When every argument and expected value is a Python literal
  and the test is nothing but such asserts, the tests are read with :mod:`ast` alone.
* **A reference solution, in the sandbox** (the EvalPlus approach). When a test computes
  its arguments or expected values (loops, helper functions, ``math.isqrt(81)``), it is
  run once in the sandbox (:func:`rllm_envs.sandbox.run`) with the reference solution as
  the function under test: every convertible assert records its arguments and expected
  value, and is kept only if the reference passes it.

What is left as assert kind (the task keeps ``kind="assert"`` and is flagged
``verdict_trust="in_process"``): asserts that compare anything but the call's value
(``abs(f(x) - y) < tol``, ``math.isclose``, ``pytest.approx``, ``sorted(f(x)) == ...``,
``x in f(y)``), tests of side effects (``f(xs); assert xs == ...``), expected exceptions
(``pytest.raises``), fixtures, arguments or values that are not JSON (tuples, sets, custom
classes such as LeetCode's ``ListNode``), and any test whose function under test is used
outside such an assert. Tolerances are never converted: the host compares functional
values exactly, so a tolerance would be lost.

Compared with the original asserts, the host comparison is slightly more lenient in two
documented ways (the JSON comparison rules of :func:`rllm_envs.sandbox.harness.
canonical_value`): a tuple equals the list with the same items, and ``True``/``False``
equal ``1``/``0``. A bare ``assert f(x)`` becomes ``== True``, which is stricter than
truthiness: with a reference solution it is converted only when the reference returns a
``bool``.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Conversion",
    "convert_asserts",
    "reference_outputs",
    "signature_params",
    "pytest_program",
    "PYTEST_SHIM",
]

#: How long the reference solution may take, per problem, to compute expected values.
REFERENCE_TIME_LIMIT = 20.0

_REC = "__rllm_rec"


@dataclass
class Conversion:
    """The outcome of :func:`convert_asserts`.

    Attributes:
        tests: Functional tests ``{"input", "output"}`` (JSON arguments, one per line;
            JSON expected value), in the order of the asserts.
        func_name: The function the tests call.
        unconverted: What could not be converted, one line each (``"line N: reason"``).
            Empty when the conversion is complete.
        used_reference: The expected values were checked by running the reference.
    """

    tests: list[dict[str, str]] = field(default_factory=list)
    func_name: str | None = None
    unconverted: list[str] = field(default_factory=list)
    used_reference: bool = False

    @property
    def complete(self) -> bool:
        """Every assert was converted (and there was at least one)."""
        return bool(self.tests) and not self.unconverted


@dataclass
class _Item:
    index: int
    node: ast.stmt
    call: ast.Call
    expected: ast.expr | None
    mode: str  # "eq", "true", "false", "evalplus"
    atol: ast.expr | None = None


class _Analysis:
    """What a test file holds: convertible asserts, and what blocks a conversion."""

    def __init__(self, tree: ast.Module, func_name: str | None) -> None:
        self.tree = tree
        self.func_name = func_name
        self.items: list[_Item] = []
        self.problems: list[str] = []
        # Asserts run repeatedly or conditionally (loops, branches, parametrize): the values
        # are known only by running the tests.
        self.executes = False
        self.checks: list[str] = []  # check(candidate)-style functions
        self.tests: list[str] = []  # pytest test functions
        self.imported: set[str] = set()  # names imported from the ``solution`` module
        self.called: list[str] = []  # names of the functions under test, as called

    # ------------------------------------------------------------------ names

    def _callee(self, node: ast.expr, aliases: set[str]) -> str | None:
        """The name under test that ``node`` calls, if it calls one."""
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id in aliases:
            return func.id
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "solution"
            and (self.func_name is None or func.attr == self.func_name)
        ):
            return func.attr
        return None

    @staticmethod
    def _mentions(node: ast.AST, aliases: set[str]) -> bool:
        return any(
            (isinstance(n, ast.Name) and n.id in aliases)
            or (isinstance(n, ast.Name) and n.id == "solution")
            for n in ast.walk(node)
        )

    # -------------------------------------------------------------- statements

    def body(self, stmts: Sequence[ast.stmt], aliases: set[str], top: bool = False) -> None:
        for stmt in stmts:
            self.statement(stmt, aliases, top)

    def statement(self, stmt: ast.stmt, aliases: set[str], top: bool) -> None:
        where = f"line {getattr(stmt, 'lineno', '?')}"
        if isinstance(stmt, ast.Assert):
            self.assertion(stmt, aliases, where)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # a docstring or a bare constant
        elif isinstance(stmt, ast.Pass):
            return
        elif isinstance(stmt, ast.Expr) and self._evalplus(stmt, aliases, where):
            return
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "solution":
                self.imported.update(a.asname or a.name for a in stmt.names)
            return  # imports are set-up; they run with the tests in the sandbox
        elif top and isinstance(stmt, ast.FunctionDef) and self._test_function(stmt):
            return
        elif (
            top
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name)
            and stmt.value.func.id in self.checks
        ):
            return  # ``check(candidate)``: the harness calls it itself
        elif isinstance(stmt, (ast.For, ast.While, ast.If)):
            for part in (
                [stmt.test] if isinstance(stmt, (ast.While, ast.If)) else [stmt.iter, stmt.target]
            ):
                if self._mentions(part, aliases):
                    self.problems.append(f"{where}: the function under test steers the test")
            self.executes = True
            self.body(stmt.body, aliases)
            self.body(stmt.orelse, aliases)
        elif isinstance(stmt, (ast.With, ast.Try, ast.Raise, ast.Return, ast.Global)):
            kind = type(stmt).__name__.lower()
            self.problems.append(f"{where}: a `{kind}` statement (e.g. an expected exception)")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if self._mentions(stmt, aliases):
                self.problems.append(f"{where}: a helper uses the function under test")
        elif self._mentions(stmt, aliases):  # assignments, bare calls, ...
            self.problems.append(
                f"{where}: the function under test is used outside an assert "
                "(e.g. a side effect or a stored result)"
            )

    def _test_function(self, fn: ast.FunctionDef) -> bool:
        """``check(candidate)`` or a pytest ``test_*`` function: its body is tests."""
        params = fn.args.args
        if fn.name == "check" and len(params) == 1 and not fn.decorator_list:
            self.checks.append(fn.name)
            self.body(fn.body, {params[0].arg})
            return True
        if fn.name.startswith("test"):
            decorators_ok = all(_is_parametrize(d) for d in fn.decorator_list)
            names = {a.arg for a in params}
            given = set().union(*(_parametrize_names(d) for d in fn.decorator_list))
            if not decorators_ok or names - given:
                self.problems.append(
                    f"line {fn.lineno}: test `{fn.name}` uses fixtures or unknown decorators"
                )
                return True
            self.tests.append(fn.name)
            if fn.decorator_list:
                self.executes = True
            self.body(fn.body, self.aliases)
            return True
        return False

    @property
    def aliases(self) -> set[str]:
        names = set(self.imported)
        if self.func_name:
            names.add(self.func_name)
        return names

    def _evalplus(self, stmt: ast.Expr, aliases: set[str], where: str) -> bool:
        """EvalPlus's ``assertion(candidate(*inp), exp, atol)``."""
        call = stmt.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "assertion"
            and len(call.args) == 3
            and not call.keywords
        ):
            return False
        target, expected, atol = call.args
        if self._callee(target, aliases) is None or self._mentions(expected, aliases):
            self.problems.append(f"{where}: an `assertion(...)` call of another form")
            return True
        assert isinstance(target, ast.Call)
        self._add(stmt, target, expected, "evalplus", where, aliases, atol)
        self.executes = True
        return True

    def assertion(self, stmt: ast.Assert, aliases: set[str], where: str) -> None:
        test = stmt.test
        if isinstance(test, ast.Constant):
            return  # ``assert True``
        call: ast.expr | None = None
        expected: ast.expr | None = None
        mode = "eq"
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if isinstance(op, ast.Eq):
                if self._callee(left, aliases):
                    call, expected = left, right
                elif self._callee(right, aliases):
                    call, expected = right, left
            elif (
                isinstance(op, ast.Is)
                and self._callee(left, aliases)
                and isinstance(right, ast.Constant)
                and isinstance(right.value, bool)
            ):
                call, mode = left, "true" if right.value else "false"
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            if self._callee(test.operand, aliases):
                call, mode = test.operand, "false"
        elif self._callee(test, aliases):
            call, mode = test, "true"
        if call is None:
            reason = "compares something other than the call's value"
            if not self._mentions(test, aliases):
                reason = "does not call the function under test"
            self.problems.append(f"{where}: the assert {reason}")
            return
        assert isinstance(call, ast.Call)
        if expected is not None and self._mentions(expected, aliases):
            self.problems.append(f"{where}: the expected value uses the function under test")
            return
        self._add(stmt, call, expected, mode, where, aliases)

    def _add(
        self,
        stmt: ast.stmt,
        call: ast.Call,
        expected: ast.expr | None,
        mode: str,
        where: str,
        aliases: set[str],
        atol: ast.expr | None = None,
    ) -> None:
        if any(self._mentions(a, aliases) for a in [*call.args, *call.keywords]):
            self.problems.append(f"{where}: an argument uses the function under test")
            return
        if any(k.arg is None for k in call.keywords):
            self.problems.append(f"{where}: `**kwargs` in the call")
            return
        name = self._callee(call, aliases)
        if name is not None and name not in self.imported and name != "solution":
            name = self.func_name or name
        self.called.append(name or "")
        self.items.append(_Item(len(self.items), stmt, call, expected, mode, atol))


def _is_parametrize(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parametrize"
    )


def _parametrize_names(node: ast.expr) -> set[str]:
    if not _is_parametrize(node):
        return set()
    assert isinstance(node, ast.Call)
    if not node.args:
        return set()
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return {n.strip() for n in first.value.split(",") if n.strip()}
    if isinstance(first, (ast.List, ast.Tuple)):
        return {str(e.value) for e in first.elts if isinstance(e, ast.Constant)}
    return set()


# ---------------------------------------------------------------------------- JSON


def _json_exact(value: Any, *, tuples: bool = False) -> bool:
    """``value`` survives a JSON round trip unchanged (``tuples``: a tuple may be a list)."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list) or (tuples and isinstance(value, tuple)):
        return all(_json_exact(v, tuples=tuples) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v, tuples=tuples) for k, v in value.items())
    return False


def _args_text(args: Sequence[Any]) -> str:
    return "\n".join(json.dumps(a, allow_nan=False) for a in args)


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


# ------------------------------------------------------------------- signatures


def signature_params(source: str, name: str) -> list[str] | None:
    """The parameter names of function ``name`` in ``source`` (a method: without ``self``).

    Looks at top-level functions and at methods of top-level classes (LeetCode's
    ``class Solution``). ``None`` if there is no such function, or it takes ``*args`` or
    ``**kwargs``, or ``source`` does not parse (starter code often ends in an empty body,
    so a ``pass`` is added when needed).
    """
    tree = None
    for text in (source, source.rstrip() + "\n        pass\n", source.rstrip() + "\n    pass\n"):
        try:
            tree = ast.parse(text)
            break
        except (SyntaxError, ValueError):
            continue
    if tree is None:
        return None
    for node in tree.body:
        defs: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append((node, False))
        elif isinstance(node, ast.ClassDef):
            defs += [
                (n, True)
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        for fn, method in defs:
            if fn.name != name:
                continue
            if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
                return None
            names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
            is_static = any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list
            )
            return names[1:] if method and not is_static and names else names
    return None


def _positional(
    args: list[Any], keywords: dict[str, Any], params: Sequence[str] | None
) -> list[Any] | None:
    """Arguments in call order, keyword ones placed by ``params`` (``None``: impossible)."""
    if not keywords:
        return args
    if params is None or set(keywords) - set(params):
        return None
    out = list(args)
    for name in params[len(args) :]:
        if name not in keywords:
            break  # the rest take their defaults, if nothing else is given
        out.append(keywords.pop(name))
    return None if keywords else out


# ------------------------------------------------------------------ conversion


def convert_asserts(
    test_code: str,
    *,
    func_name: str | None = None,
    reference: str | None = None,
    setup: str = "",
    prelude: str = "",
    params: Sequence[str] | None = None,
    backend: Any = None,
) -> Conversion:
    """Convert assert-style tests into functional tests (see the module docstring).

    Args:
        test_code: The tests: top-level asserts (MBPP), a ``check(candidate)`` function and
            its call (HumanEval, LeetCode), or a pytest file (KodCode).
        func_name: The function under test (HumanEval's ``entry_point``, LeetCode's method
            name). ``None``: the function the asserts call (it must be one).
        reference: A reference solution. With one, tests that compute their values are run
            once in the sandbox to record them, and only asserts it passes are kept.
        setup: Code the tests need first (MBPP's ``test_setup_code``), run with them.
        prelude: Code run before the reference (imports, LeetCode's helpers).
        params: The parameter names of the function under test, to place keyword arguments
            (found in ``reference`` when not given).
        backend: The sandbox backend for the reference run (see
            :func:`rllm_envs.sandbox.run`).

    Returns:
        A :class:`Conversion`; ``complete`` says whether every assert was converted. Never
        raises for what the test code holds.
    """
    try:
        tree = ast.parse(setup + "\n" + test_code if setup else test_code)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        return Conversion(func_name=func_name, unconverted=[f"the tests do not parse: {e}"])
    if func_name is None:
        func_name = _guess_func_name(tree, reference)
    analysis = _Analysis(tree, func_name)
    # check(candidate) and test_* functions are looked at where they are defined.
    analysis.body(tree.body, analysis.aliases, top=True)
    called = {n for n in analysis.called if n}
    if len(called) > 1:
        analysis.problems.append(f"the asserts call several functions: {sorted(called)}")
    elif called and func_name is None:
        func_name = next(iter(called))
    result = Conversion(func_name=func_name, unconverted=list(analysis.problems))
    if not analysis.items and not result.unconverted:
        result.unconverted.append("no assert calls the function under test")
    if result.unconverted or func_name is None:
        if func_name is None and not result.unconverted:
            result.unconverted.append("cannot tell which function the tests call")
        return result
    if params is None and reference:
        params = signature_params(reference, func_name)
    # ``assert f(x)`` means truthy: with a reference, it is checked that ``f`` returns a bool.
    truthiness = bool(reference) and any(i.mode in ("true", "false") for i in analysis.items)
    if not analysis.executes and not truthiness:
        literal = _convert_literals(analysis.items, params)
        if literal is not None:
            result.tests = literal
            return result
    if not reference:
        result.unconverted.append(
            "the tests compute their values and there is no reference solution to run"
        )
        return result
    return _convert_with_reference(analysis, result, reference, prelude, backend)


def _guess_func_name(tree: ast.Module, reference: str | None) -> str | None:
    """The function the top-level asserts call (MBPP records name none)."""
    import builtins

    builtin = set(dir(builtins))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                    if sub.func.id not in builtin:
                        names.append(sub.func.id)
                        break
    if reference:
        try:
            defined = {
                n.name
                for n in ast.parse(reference).body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        except (SyntaxError, ValueError):
            defined = set()
        names = [n for n in names if n in defined] or names
    return max(set(names), key=names.count) if names else None


def _convert_literals(
    items: list[_Item], params: Sequence[str] | None
) -> list[dict[str, str]] | None:
    tests = []
    for item in items:
        if item.mode == "evalplus" or any(isinstance(a, ast.Starred) for a in item.call.args):
            return None
        values = []
        for node in [*item.call.args, *(k.value for k in item.call.keywords)]:
            ok, value = _literal(node)
            if not ok or not _json_exact(value):
                return None
            values.append(value)
        n = len(item.call.args)
        keywords = {str(k.arg): v for k, v in zip(item.call.keywords, values[n:], strict=True)}
        args = _positional(values[:n], keywords, params)
        if args is None:
            return None
        if item.mode == "eq":
            assert item.expected is not None
            ok, expected = _literal(item.expected)
            if not ok or not _json_exact(expected, tuples=True):
                return None
        else:
            expected = item.mode == "true"
        tests.append({"input": _args_text(args), "output": json.dumps(expected)})
    return tests


class _Instrument(ast.NodeTransformer):
    """Replace each convertible assert with a call that records it."""

    def __init__(self, items: list[_Item], checks: list[str]) -> None:
        self.by_node = {id(i.node): i for i in items}
        self.checks = set(checks)

    def visit_Expr(self, node: ast.Expr) -> Any:
        if id(node) in self.by_node:
            return self._record(self.by_node[id(node)], node)
        if (
            isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in self.checks
        ):
            return ast.Pass()  # check(...) is called by the recorder
        return self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> Any:
        if id(node) in self.by_node:
            return self._record(self.by_node[id(node)], node)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        return ast.Pass() if node.module == "solution" else node

    def visit_Import(self, node: ast.Import) -> Any:
        if any(a.name == "solution" for a in node.names):
            return ast.parse("solution = __import__('types').SimpleNamespace(**globals())").body[0]
        return node

    @staticmethod
    def _record(item: _Item, node: ast.stmt) -> ast.stmt:
        def lam(body: ast.expr) -> ast.Lambda:
            return ast.Lambda(
                args=ast.arguments(
                    posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]
                ),
                body=body,
            )

        call = ast.Call(
            func=ast.Name(_REC, ast.Load()),
            args=[
                ast.Constant(item.index),
                lam(ast.List(elts=list(item.call.args), ctx=ast.Load())),
                lam(
                    ast.Dict(
                        keys=[ast.Constant(k.arg) for k in item.call.keywords],
                        values=[k.value for k in item.call.keywords],
                    )
                ),
                lam(item.expected if item.expected is not None else ast.Constant(None)),
                ast.Constant(item.mode),
                lam(item.atol if item.atol is not None else ast.Constant(0)),
            ],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(call), node)


def _convert_with_reference(
    analysis: _Analysis, result: Conversion, reference: str, prelude: str, backend: Any
) -> Conversion:
    tree = _Instrument(analysis.items, analysis.checks).visit(analysis.tree)
    ast.fix_missing_locations(tree)
    try:
        code = ast.unparse(tree)
    except Exception as e:  # noqa: BLE001  (unparse of odd trees: anything means "no")
        result.unconverted.append(f"cannot rewrite the tests: {type(e).__name__}")
        return result
    job = {
        "prelude": prelude,
        "reference": reference,
        "func_name": result.func_name,
        "code": code,
        "checks": analysis.checks,
        "tests": analysis.tests,
    }
    outcome = _run_job(job, backend)
    result.used_reference = True
    if outcome.get("error"):
        result.unconverted.append(f"the reference run failed: {outcome['error']}")
        return result
    failed = {int(i): str(why) for i, why in outcome.get("failures", [])}
    for i, why in sorted(failed.items()):
        stmt = analysis.items[i].node
        result.unconverted.append(f"line {getattr(stmt, 'lineno', '?')}: {why}")
    records = outcome.get("records", [])
    if not records and not result.unconverted:
        result.unconverted.append("no assert ran with the reference solution")
    if not result.unconverted:
        result.tests = [{"input": str(r[1]), "output": str(r[2])} for r in records]
    return result


def reference_outputs(
    reference: str,
    func_name: str,
    inputs: Sequence[Sequence[Any]],
    *,
    prelude: str = "",
    backend: Any = None,
) -> list[tuple[str, Any] | None]:
    """Run the reference solution on argument lists in the sandbox (EvalPlus's oracle).

    Returns, per input, ``(arguments as JSON lines, the value returned)`` or ``None`` where
    the arguments or the value are not JSON or the reference failed.
    """
    code = (
        "import json as _json\n"
        f"_INPUTS = _json.loads({json.dumps(json.dumps(list(inputs)))})\n"
        "for _a in _INPUTS:\n"
        f"    {_REC}(0, lambda: list(_a), lambda: {{}}, lambda: None, 'ref', lambda: 0)\n"
    )
    job = {
        "prelude": prelude,
        "reference": reference,
        "func_name": func_name,
        "code": code,
        "checks": [],
        "tests": [],
        "per_call": True,
    }
    outcome = _run_job(job, backend)
    if outcome.get("error"):
        return [None] * len(inputs)
    calls = outcome.get("calls", [])
    out: list[tuple[str, Any] | None] = []
    for n in range(len(inputs)):
        entry = calls[n] if n < len(calls) else None
        out.append(None if entry is None else (str(entry[0]), json.loads(entry[1])))
    return out


def _run_job(job: Mapping[str, Any], backend: Any) -> dict[str, Any]:
    from rllm_envs.sandbox import Limits, Status, run

    limits = Limits(
        time_limit=REFERENCE_TIME_LIMIT + 2,
        memory_mb=1024,
        max_output_bytes=64 << 20,
        max_file_size_mb=1,
    )
    outcome = run(
        _RECORDER,
        stdin=json.dumps({**job, "limit": REFERENCE_TIME_LIMIT}),
        backend=backend,
        limits=limits,
    )
    last = outcome.stdout.strip().rsplit("\n", 1)[-1] if outcome.stdout.strip() else ""
    try:
        parsed = json.loads(last)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        why = outcome.status.value if outcome.status is not Status.OK else "no report"
        return {"error": f"{why}: {outcome.stderr[-300:].strip()}"}
    return parsed


#: A minimal stand-in for the parts of pytest that KodCode-style test files use:
#: ``raises`` (with ``match``), ``approx``, ``mark.parametrize`` (expanded by
#: ``_rllm_run_tests``), other marks as no-ops. Sandboxes have no pytest.
PYTEST_SHIM = r"""
import sys as _rllm_sys, types as _rllm_types, re as _rllm_re, itertools as _rllm_it


class _RllmRaises:
    def __init__(self, exc, match=None):
        self.exc, self.match, self.value = exc, match, None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            raise AssertionError(f"DID NOT RAISE {self.exc}")
        if not issubclass(et, self.exc):
            return False
        if self.match is not None and not _rllm_re.search(self.match, str(ev)):
            raise AssertionError(f"{ev!r} does not match {self.match!r}")
        self.value = ev
        return True


def _rllm_raises(exc, *args, match=None, **kwargs):
    if args:
        with _RllmRaises(exc, match):
            args[0](*args[1:], **kwargs)
        return None
    return _RllmRaises(exc, match)


class _RllmApprox:
    def __init__(self, expected, rel=None, abs=None):
        self.expected = expected
        self.rel = 1e-6 if rel is None else rel
        self.abs = 1e-12 if abs is None else abs

    def _close(self, a, b):
        if isinstance(b, dict):
            return isinstance(a, dict) and a.keys() == b.keys() and all(
                self._close(a[k], b[k]) for k in b)
        if isinstance(b, (list, tuple)):
            return isinstance(a, (list, tuple)) and len(a) == len(b) and all(
                self._close(x, y) for x, y in zip(a, b))
        try:
            return a == b or abs(a - b) <= max(self.abs, self.rel * abs(b))
        except TypeError:
            return False

    def __eq__(self, other):
        return self._close(other, self.expected)

    def __repr__(self):
        return f"approx({self.expected!r})"


def _rllm_parametrize(names, values, **kwargs):
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]

    def decorate(fn):
        fn.__dict__.setdefault("_rllm_params", []).insert(0, (list(names), list(values)))
        return fn

    return decorate


class _RllmMark:
    parametrize = staticmethod(_rllm_parametrize)

    def __getattr__(self, name):
        def mark(*args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]
            return lambda fn: fn
        return mark


def _rllm_fixture(*args, **kwargs):
    if len(args) == 1 and callable(args[0]):
        return args[0]
    return lambda fn: fn


_rllm_pytest = _rllm_types.ModuleType("pytest")
_rllm_pytest.raises = _rllm_raises
_rllm_pytest.approx = _RllmApprox
_rllm_pytest.mark = _RllmMark()
_rllm_pytest.fixture = _rllm_fixture
_rllm_sys.modules["pytest"] = _rllm_pytest


def _rllm_calls(fn):
    groups = getattr(fn, "_rllm_params", [])
    combos = [[]]
    for names, values in groups:
        rows = [v if len(names) > 1 else (v,) for v in values]
        combos = [c + list(zip(names, row)) for c in combos for row in rows]
    return [dict(c) for c in combos]


def _rllm_run_tests(namespace):
    for name, fn in list(namespace.items()):
        if name.startswith("test") and isinstance(fn, _rllm_types.FunctionType):
            for kwargs in _rllm_calls(fn):
                fn(**kwargs)
"""


def pytest_program(test_code: str) -> str:
    """A pytest-style test file as assert-kind test code (run after the submission).

    ``from solution import ...`` is dropped (the submission's names are already defined),
    ``import solution`` binds a namespace of them, pytest is replaced by
    :data:`PYTEST_SHIM`, and every ``test*`` function is called (parametrized ones once
    per parameter set). Its verdict is decided in process (``verdict_trust="in_process"``).
    """
    lines = []
    for line in test_code.split("\n"):
        stripped = line.strip()
        if stripped.startswith("from solution import"):
            indent = line[: len(line) - len(line.lstrip())]
            lines.append(indent + "pass")
            continue
        if stripped == "import solution":
            indent = line[: len(line) - len(line.lstrip())]
            lines.append(indent + "solution = __import__('types').SimpleNamespace(**globals())")
            continue
        lines.append(line)
    return PYTEST_SHIM + "\n" + "\n".join(lines) + "\n\n_rllm_run_tests(dict(globals()))\n"


# The program run in the sandbox: it reads one job (JSON) on stdin and prints one report.
_RECORDER = (
    PYTEST_SHIM
    + r"""
import json, signal, sys, inspect


class _RllmTimeout(BaseException):
    pass


def _rllm_alarm(signum, frame):
    raise _RllmTimeout()


def _exact(value, tuples=False):
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list) or (tuples and isinstance(value, tuple)):
        return all(_exact(v, tuples) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _exact(v, tuples) for k, v in value.items())
    return False


def _floats(x):
    if isinstance(x, float):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(i, float) for i in x)


job = json.loads(sys.stdin.read())
report = {"records": [], "failures": [], "calls": [], "error": None}
ns = {"__name__": "__rllm_tests__", "__builtins__": __builtins__}
signal.signal(signal.SIGALRM, _rllm_alarm)
signal.setitimer(signal.ITIMER_REAL, float(job["limit"]))
try:
    exec(job["prelude"] or "", ns)
    exec(job["reference"], ns)
    name = job["func_name"]
    if "Solution" in ns and hasattr(ns["Solution"], name):
        target = getattr(ns["Solution"](), name)
    elif name in ns:
        target = ns[name]
    else:
        raise NameError(f"the reference defines no `Solution.{name}` or `{name}`")
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = None

    def __rllm_rec(i, args_fn, kw_fn, exp_fn, mode, atol_fn):
        try:
            args, kw = list(args_fn()), dict(kw_fn())
            if kw:
                if sig is None:
                    raise TypeError("keyword arguments and no signature")
                bound = sig.bind(*args, **kw)
                if bound.kwargs:
                    raise TypeError("keyword-only arguments")
                args = list(bound.args)
            if not all(_exact(a) for a in args):
                raise TypeError("an argument is not plain JSON (a tuple, set, object...)")
            text = "\n".join(json.dumps(a, allow_nan=False) for a in args)
            got = target(*[json.loads(line) for line in text.split("\n") if line.strip()]
                         if text else [])
            if mode == "ref":
                if not _exact(got, True):
                    raise TypeError("the reference returned a value that is not JSON")
                report["calls"].append([text, json.dumps(got, allow_nan=False)])
                return
            if mode == "true":
                exp, ok = True, got is True
            elif mode == "false":
                exp, ok = False, got is False
            else:
                exp = exp_fn()
                ok = got == exp
                if mode == "evalplus" and (atol_fn() != 0 or _floats(exp)):
                    raise TypeError("compared with a tolerance")
            if not ok:
                raise AssertionError("the reference solution does not pass it")
            if not _exact(exp, True):
                raise TypeError("the expected value is not plain JSON")
            report["records"].append([i, text, json.dumps(exp, allow_nan=False)])
        except _RllmTimeout:
            raise
        except BaseException as e:
            if mode == "ref":
                report["calls"].append(None)
            report["failures"].append([i, f"{type(e).__name__}: {e}"[:300]])

    ns["__rllm_rec"] = __rllm_rec
    for key in ("_rllm_run_tests",):
        ns[key] = globals()[key]
    exec(compile(job["code"], "tests.py", "exec"), ns)
    for check in job["checks"]:
        ns[check](target)
    for test in job["tests"]:
        fn = ns[test]
        for kwargs in _rllm_calls(fn):
            fn(**kwargs)
except _RllmTimeout:
    report["error"] = "the reference solution timed out"
except BaseException as e:
    report["error"] = f"{type(e).__name__}: {e}"[:300]
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
sys.stdout.write("\n" + json.dumps(report) + "\n")
sys.stdout.flush()
"""
)
