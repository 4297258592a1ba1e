"""Tables of expected values in a hidden test module: found on the host, moved out of the probe.

A probe (:mod:`rllm_envs.swe.probe`) drops the literal side of each check, but a test often
keeps its expected values in a table: ``CASES = [("Hello World", "hello-world"), ...]`` with
``for text, want in CASES: assert slugify(text) == want``, ``all(...)`` over it, a
``parametrize`` list, ``zip(INPUTS, EXPECTED)``, a dict ``{input: expected}``, a class
attribute, or a local ``expected = {...}``. :func:`analyse` follows, inside the module, where
each element of such a literal flows: a name bound to a table (module, class or function
level, bound once) or to part of one (a ``for`` target, a comprehension's, an assignment's, a
``parametrize`` argument) is an *origin* ``(table, path)``, and each place the module reads
an origin is a *use*. The probe treats every use as a literal (an expected side) and reports
which ones it dropped; an element path is *moved* when every use of it (and of anything
containing it) was dropped and its elements are literals. :meth:`Tables.rewrite` then puts a
placeholder (a plain index, nothing derived from the value) in place of each moved element,
so the probe, the sandbox's memory and its files hold no trace of it, and gives each
rewritten ``parametrize`` case an opaque id (``[0-1]``): :attr:`Tables.labels` maps the
original node ids (which name the values) to the probe's. The host compares the computed
side's observations with the reference's, whose unchanged tests passed on the literals.

Paths: ``"*"`` any element of a list, tuple or set; an int, one position of a row (a tuple,
a list or a ``pytest.param``); ``"k"`` / ``"v"`` a dict's keys / values.
"""

from __future__ import annotations

import ast
import builtins
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Origin", "Tables", "analyse", "empty", "node_key", "STAR", "KEYS", "VALUES"]

STAR = "*"
KEYS = "k"
VALUES = "v"
#: Names and attributes that read a module's or a frame's variables by name: a module that
#: uses one keeps its tables (whatever it reads could be a moved value).
_DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__"})
_DYNAMIC_ATTRS = frozenset(
    {"__dict__", "f_globals", "f_locals", "_getframe", "getmembers", "currentframe", "stack"}
)
_BY_NAME = frozenset({"getattr", "hasattr", "setattr", "delattr"})


#: Methods that set a test class's instance up before each test.
_SETUP_METHODS = frozenset({"setUp", "setup_method"})


def node_key(node: ast.AST) -> tuple[Any, ...]:
    """Where ``node`` is in its source: the same node of another parse has the same key."""
    return (
        type(node).__name__,
        getattr(node, "lineno", None),
        getattr(node, "col_offset", None),
        getattr(node, "end_lineno", None),
        getattr(node, "end_col_offset", None),
    )


def dotted(node: ast.expr) -> str:
    """``a.b.c`` of a name or attribute chain, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _computed_key(node: ast.expr) -> bool:
    """Whether a subscript key calls something other than a builtin (the code under test)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            name = dotted(inner.func)
            if not name or name.split(".")[0] not in _BUILTIN_NAMES:
                return True
    return False


_BUILTIN_NAMES = frozenset(n for n in dir(builtins) if not n.startswith("_"))


def _is_param(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and dotted(node.func) in ("pytest.param", "param")


def is_parametrize(node: ast.AST) -> bool:
    """Whether ``node`` is a ``pytest.mark.parametrize(...)`` call."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node.func)
    return name == "pytest.mark.parametrize" or name.endswith("mark.parametrize")


@dataclass(frozen=True)
class Origin:
    """Elements ``path`` of table ``table``."""

    table: str
    path: tuple[Any, ...] = ()

    def step(self, step: Any) -> Origin:
        """The elements one ``step`` further down."""
        return Origin(self.table, (*self.path, step))


@dataclass(frozen=True)
class _Pack:
    """What ``zip(...)``, ``enumerate(...)`` or ``.items()`` yields: one value per position."""

    items: tuple[Origin | _Pack | None, ...]


_Value = Origin | _Pack | None


def _children(node: ast.AST, step: Any) -> list[ast.expr] | None:
    """The literal's nodes one ``step`` down, or ``None`` when it does not have that shape."""
    if step == STAR:
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elts = node.elts
        else:
            return None
    elif isinstance(step, int):
        if _is_param(node):
            elts = node.args  # type: ignore[attr-defined]
        elif isinstance(node, (ast.List, ast.Tuple)):
            elts = node.elts
        else:
            return None
        if step >= len(elts) or any(isinstance(e, ast.Starred) for e in elts[: step + 1]):
            return None
        return [elts[step]]
    elif step in (KEYS, VALUES) and isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            return None
        return list(node.keys if step == KEYS else node.values)  # type: ignore[arg-type]
    else:
        return None
    if any(isinstance(e, ast.Starred) for e in elts):
        return None
    return list(elts)


def leaves(node: ast.AST, path: tuple[Any, ...]) -> list[ast.expr] | None:
    """The nodes at ``path`` of literal ``node``, or ``None`` when it has another shape."""
    nodes: list[Any] = [node]
    for step in path:
        found: list[ast.expr] = []
        for n in nodes:
            below = _children(n, step)
            if below is None:
                return None
            found += below
        nodes = found
    return nodes


def _replace(node: ast.AST, path: tuple[Any, ...], make: Callable[[], ast.expr]) -> ast.AST:
    """Put ``make()`` in place of every node at ``path`` of ``node``; return the new root."""
    if not path:
        return make()
    step, rest = path[0], path[1:]
    if step == STAR:
        container = node.elts  # type: ignore[attr-defined]
        places: Any = range(len(container))
    elif isinstance(step, int):
        container = node.args if _is_param(node) else node.elts  # type: ignore[attr-defined]
        places = [step]
    else:
        container = node.keys if step == KEYS else node.values  # type: ignore[attr-defined]
        places = range(len(container))
    for i in places:
        container[i] = _replace(container[i], rest, make)
    return node


def _comparable(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether one path is within the other (``"*"`` stands for any position)."""
    for x, y in zip(a, b, strict=False):
        if x == y or (x == STAR and isinstance(y, int)) or (y == STAR and isinstance(x, int)):
            continue
        return False
    return True


def empty(node: ast.AST | None) -> bool:
    """Whether ``node`` is an empty list, tuple, set or dict display (it holds no value)."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return not node.elts
    return isinstance(node, ast.Dict) and not node.keys


def _literal(node: ast.expr) -> bool:
    from rllm_envs.swe.probe import is_literal  # probe imports this module

    return is_literal(node)


def _bindings(node: ast.AST) -> dict[str, int]:
    """How many times each name is bound anywhere under ``node`` (any scope)."""
    counts: dict[str, int] = {}

    def add(name: str | None, n: int = 1) -> None:
        if name:
            counts[name] = counts.get(name, 0) + n

    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            add(inner.id)
        elif isinstance(inner, ast.arg):
            add(inner.arg)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(inner.name)
        elif isinstance(inner, (ast.Import, ast.ImportFrom)):
            for alias in inner.names:
                add((alias.asname or alias.name).partition(".")[0])
        elif isinstance(inner, ast.ExceptHandler):
            add(inner.name)
        elif isinstance(inner, (ast.Global, ast.Nonlocal)):
            for name in inner.names:
                add(name, 2)  # never a table: bound elsewhere too
        elif isinstance(inner, (ast.MatchAs, ast.MatchStar)):
            add(inner.name)
        elif isinstance(inner, ast.MatchMapping):
            add(inner.rest)
    return counts


@dataclass
class _Decorated:
    """A function's ``parametrize`` decorators that the host can label.

    ``rows``: each decorator's list of cases (inline, or the module table it names), bottom
    decorator last as written; ``labels``: the original id suffixes, in the runner's order.
    """

    qualname: str
    decorators: list[ast.Call]
    tables: list[str]
    rows: list[Any]
    labels: list[str]


@dataclass
class Tables:
    """What :func:`analyse` found in one parse of a test module.

    Attributes:
        tables: The literal of each table, by key.
        uses: Each place an origin is read, by :func:`node_key`.
        blocked: Tables read in a way no path follows (nothing of them moves).
        bad: Elements bound where their reads are not followed (they do not move).
        unlabelled: A ``parametrize`` whose ids the host cannot compute.
        dynamic: The module reads variables by a computed name (nothing moves).
        labels: After :meth:`rewrite`: per test (``name`` or ``Class::name``), the probe's
            id suffix of each original one (``"[Hello World-hello-world]" -> "[0]"``).
        moved_values: After :meth:`rewrite`: the elements it replaced (expected values),
            each with the other elements of its row (the inputs it goes with).
    """

    tables: dict[str, ast.AST] = field(default_factory=dict)
    owners: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    uses: dict[tuple[Any, ...], Origin] = field(default_factory=dict)
    blocked: set[str] = field(default_factory=set)
    bad: list[Origin] = field(default_factory=list)
    unlabelled: bool = False
    dynamic: bool = False
    decorated: list[_Decorated] = field(default_factory=list)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    moved_values: list[tuple[ast.expr, tuple[ast.expr, ...]]] = field(default_factory=list)

    def movable(self, marked: set[tuple[Any, ...]], dropped: set[tuple[Any, ...]]) -> set[Origin]:
        """The origins whose every use is marked and was dropped, with literal elements."""
        bad: dict[str, list[tuple[Any, ...]]] = {}
        for origin in self.bad:
            bad.setdefault(origin.table, []).append(origin.path)
        for key, origin in self.uses.items():
            if key not in marked or key not in dropped:
                bad.setdefault(origin.table, []).append(origin.path)
        found = set()
        for key, origin in self.uses.items():
            if origin in found or key not in marked or origin.table in self.blocked:
                continue
            if any(_comparable(origin.path, b) for b in bad.get(origin.table, ())):
                continue
            nodes = leaves(self.tables[origin.table], origin.path)
            if nodes and all(_literal(n) for n in nodes):
                found.add(origin)
        return found

    def rewrite(self, moved: set[Origin]) -> None:
        """Put placeholders in place of the ``moved`` elements; relabel ``parametrize`` cases."""
        counter = itertools.count()
        by_table: dict[str, list[tuple[Any, ...]]] = {}
        # In a fixed order: the same module gets the same placeholders in every process.
        for origin in sorted(moved, key=repr):
            by_table.setdefault(origin.table, []).append(origin.path)
        for table, paths in by_table.items():
            # Outer paths first: an inner one inside a replaced element has nothing left.
            root = self.tables[table]
            parents = _parents(root)
            for path in sorted(set(paths), key=lambda p: (len(p), repr(p))):
                nodes = leaves(root, path)
                if nodes is None:
                    continue
                self.moved_values.extend((n, _row_mates(root, n, parents)) for n in nodes)
                root = _replace(root, path, lambda: ast.Constant(next(counter)))
            owner, attr = self.owners[table]
            if isinstance(owner, list):
                owner[attr] = root
            else:
                setattr(owner, attr, root)
            self.tables[table] = root
        for decorated in self.decorated:
            if any(t in by_table for t in decorated.tables):
                self.labels[decorated.qualname] = _relabel(decorated, self.tables)


def _row_mates(root: ast.AST, leaf: ast.AST, parents: dict[int, ast.AST]) -> tuple[ast.expr, ...]:
    """The other elements of the row ``leaf`` is in (a dict value's key; none at the top).

    ``parents``: each node's parent in ``root``, by ``id`` (:func:`_parents`).
    """
    parent = parents.get(id(leaf))
    if parent is None or parent is root:
        return ()
    if isinstance(parent, ast.Dict):
        for key, value in zip(parent.keys, parent.values, strict=True):
            if leaf is value and key is not None:
                return (key,)
            if leaf is key:
                return (value,)
        return ()
    elts = parent.args if isinstance(parent, ast.Call) and _is_param(parent) else None
    elts = getattr(parent, "elts", None) if elts is None else elts
    return tuple(e for e in elts if e is not leaf) if isinstance(elts, list) else ()


def _parents(root: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(root) for child in ast.iter_child_nodes(node)}


def _eval(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def _host_marks(decorators: list[ast.Call], tables: dict[str, ast.AST]) -> list[Any] | None:
    """The decorators as the runner's marks (bottom one first), with values evaluated here."""
    from rllm_envs.swe import executor

    marks = []
    for call in reversed(decorators):
        if len(call.args) != 2 or any(k.arg != "ids" for k in call.keywords):
            return None
        names_node, values_node = call.args
        if isinstance(values_node, ast.Name) and values_node.id in tables:
            values_node = tables[values_node.id]  # type: ignore[assignment]
        if not isinstance(values_node, (ast.List, ast.Tuple)):
            return None
        try:
            names = _eval(names_node)
            values = []
            for row in values_node.elts:
                if _is_param(row):
                    assert isinstance(row, ast.Call)
                    if any(k.arg not in ("id", "marks") for k in row.keywords):
                        return None
                    given = next((k.value for k in row.keywords if k.arg == "id"), None)
                    values.append(
                        executor._Param(
                            tuple(_eval(a) for a in row.args),
                            None if given is None else _eval(given),
                            (),
                        )
                    )
                else:
                    values.append(_eval(row))
            ids = next((_eval(k.value) for k in call.keywords if k.arg == "ids"), None)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, AssertionError):
            return None
        if ids is not None and not (
            isinstance(ids, (list, tuple)) and all(i is None or isinstance(i, str) for i in ids)
        ):
            return None
        if not isinstance(names, (str, list, tuple)):
            return None
        marks.append(executor._Mark("parametrize", (names, values), {"ids": ids}))
    return marks


class _Function:
    """What the runner's ``_parametrize`` reads from a test function."""

    def __init__(self, marks: list[Any]) -> None:
        self.pytestmark = marks


def _labels(marks: list[Any]) -> list[str] | None:
    from rllm_envs.swe import executor

    try:
        return [label for label, _, _ in executor._parametrize(_Function(marks))]
    except Exception:
        return None


def _relabel(decorated: _Decorated, tables: dict[str, ast.AST]) -> dict[str, str]:
    """Give each case of ``decorated`` an opaque id; the original labels -> the probe's."""
    from rllm_envs.swe import executor

    marks = []
    for call, key in zip(decorated.decorators, decorated.tables, strict=True):
        rows = tables[key]
        count = len(rows.elts)  # type: ignore[attr-defined]
        opaque = [str(i) for i in range(count)]
        for i, row in enumerate(rows.elts):  # type: ignore[attr-defined]
            if _is_param(row):
                assert isinstance(row, ast.Call)
                row.keywords = [k for k in row.keywords if k.arg != "id"]
                row.keywords.append(ast.keyword("id", ast.Constant(opaque[i])))
        call.keywords = [k for k in call.keywords if k.arg != "ids"]
        call.keywords.append(
            ast.keyword("ids", ast.List([ast.Constant(i) for i in opaque], ast.Load()))
        )
        marks.append(executor._Mark("parametrize", ("_", [None] * count), {"ids": opaque}))
    probe = _labels(list(reversed(marks))) or []
    return dict(zip(decorated.labels, probe, strict=True))


class _Analysis:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.out = Tables()
        self.module_names: dict[str, str] = {}
        self.class_attrs: dict[str, dict[str, str]] = {}
        self.attr_tables: dict[str, set[str]] = {}
        self.setup_targets: set[int] = set()  # ``self.x = ..`` of a setUp that binds a table
        self.bound: set[tuple[Any, ...]] = set()
        self.counts = _bindings(tree)
        self.loop_origins: dict[str, list[Origin]] = {}
        self.ambiguous: set[str] = set()

    # -------------------------------------------------------------- tables

    def _add(self, key: str, owner: Any, attr: Any) -> None:
        self.out.tables[key] = owner[attr] if isinstance(owner, list) else getattr(owner, attr)
        self.out.owners[key] = (owner, attr)

    @staticmethod
    def _table_value(node: ast.AST) -> bool:
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            return True
        return isinstance(node, ast.expr) and _literal(node)

    def find_tables(self) -> None:
        for statement in self.tree.body:
            target = _single_target(statement)
            if target is not None and self.counts.get(target, 0) == 1:
                if self._table_value(statement.value):  # type: ignore[attr-defined]
                    self.module_names[target] = target
                    self._add(target, statement, "value")
            if isinstance(statement, ast.ClassDef):
                inside = _bindings(ast.Module(statement.body, []))
                attrs: dict[str, str] = {}
                for member in statement.body:
                    name = _single_target(member)
                    if name is None or inside.get(name, 0) != 1:
                        continue
                    if self._table_value(member.value):  # type: ignore[attr-defined]
                        key = f"{statement.name}.{name}"
                        attrs[name] = key
                        self.attr_tables.setdefault(name, set()).add(key)
                        self._add(key, member, "value")
                # ``self.expected = "Hello World"`` in ``setUp``: an attribute every test of
                # the class reads, bound once, as a class attribute is (when nothing else
                # writes an attribute of that name, below).
                for member in statement.body:
                    if not (
                        isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and member.name in _SETUP_METHODS
                    ):
                        continue
                    for line in member.body:
                        field_ = line.targets[0] if isinstance(line, ast.Assign) else None
                        if not (
                            isinstance(field_, ast.Attribute)
                            and len(line.targets) == 1  # type: ignore[attr-defined]
                            and isinstance(field_.value, ast.Name)
                            and field_.value.id == "self"
                            and field_.attr not in attrs
                            and self._table_value(line.value)  # type: ignore[attr-defined]
                        ):
                            continue
                        key = f"{statement.name}.{field_.attr}"
                        attrs[field_.attr] = key
                        self.attr_tables.setdefault(field_.attr, set()).add(key)
                        self.setup_targets.add(id(field_))
                        self._add(key, line, "value")
                self.class_attrs[statement.name] = attrs
        for keys in self.attr_tables.values():
            if len(keys) > 1:  # one class's method may read another's (a subclass's) table
                self.out.blocked |= keys
        for node in ast.walk(self.tree):
            # An attribute of that name written anywhere: not a table.
            if (
                isinstance(node, ast.Attribute)
                and not isinstance(node.ctx, ast.Load)
                and id(node) not in self.setup_targets
            ):
                self.out.blocked |= self.attr_tables.get(node.attr, set())
            # Named in a string (``getattr(cls, "CASES")``, a fixture's name...).
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.out.blocked |= self.attr_tables.get(node.value, set())
                if node.value in self.module_names:
                    self.out.blocked.add(self.module_names[node.value])

    def dynamic(self) -> bool:
        """Whether the module reads variables by a computed name (then nothing moves)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
                return True
            if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRS:
                return True
            if (
                isinstance(node, ast.Call)
                and dotted(node.func) in _BY_NAME
                and len(node.args) >= 2
                and not isinstance(node.args[1], ast.Constant)
            ):
                return True
        return False

    # -------------------------------------------------------------- origins

    def origin(self, node: ast.expr, env: dict[str, Any], klass: str | None) -> _Value:
        """The origin of the value of ``node`` (a name, attribute or subscript chain)."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in env:
                value = env[node.id]
                return value if isinstance(value, (Origin, _Pack)) else None
            if node.id in self.module_names and node.id not in env.get(" locals", ()):
                return Origin(self.module_names[node.id])
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = node.value.id
            if owner in ("self", "cls") and klass is not None:
                key = self.class_attrs.get(klass, {}).get(node.attr)
            else:
                key = self.class_attrs.get(owner, {}).get(node.attr)
            return Origin(key) if key and key not in self.out.blocked else None
        if isinstance(node, ast.Subscript):
            base = self.origin(node.value, env, klass)
            if not isinstance(base, Origin) or isinstance(node.slice, ast.Slice):
                return None
            if _computed_key(node.slice):
                # ``TABLE[area(3, 4)]``: a lookup by the code's value decides, not a read of
                # an expected value (taken as one, the whole check was dropped).
                return None
            kind = self.kind(base)
            if kind == "dict":
                return base.step(VALUES)
            if kind == "seq":
                index = node.slice
                if isinstance(index, ast.Constant) and type(index.value) is int:
                    if index.value >= 0:
                        return base.step(index.value)
                    return None
                return base.step(STAR)
        return None

    def kind(self, origin: Origin) -> str | None:
        nodes = leaves(self.out.tables[origin.table], origin.path)
        if not nodes:
            return None
        if all(isinstance(n, ast.Dict) for n in nodes):
            return "dict"
        if all(isinstance(n, (ast.List, ast.Tuple, ast.Set)) or _is_param(n) for n in nodes):
            return "seq"
        return None

    def element(
        self, node: ast.expr, env: dict[str, Any], klass: str | None, chains: list[ast.expr]
    ) -> _Value:
        """What iterating ``node`` yields; ``chains`` receives the tables it iterates."""
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            if name == "zip" and node.args and all(k.arg == "strict" for k in node.keywords):
                return _Pack(tuple(self.element(a, env, klass, chains) for a in node.args))
            if node.keywords:
                return None
            if name == "enumerate" and len(node.args) == 1:
                return _Pack((None, self.element(node.args[0], env, klass, chains)))
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("items", "keys", "values")
                and not node.args
            ):
                base = self.origin(func.value, env, klass)
                if isinstance(base, Origin) and self.kind(base) == "dict":
                    chains.append(func.value)
                    if func.attr == "items":
                        return _Pack((base.step(KEYS), base.step(VALUES)))
                    return base.step(KEYS if func.attr == "keys" else VALUES)
            return None
        base = self.origin(node, env, klass)
        if isinstance(base, Origin):
            kind = self.kind(base)
            if kind is not None:
                chains.append(node)
                return base.step(KEYS if kind == "dict" else STAR)
        return None

    def bind(self, target: ast.expr, value: _Value, env: dict[str, Any], counts: dict) -> bool:
        """Bind ``target`` to ``value``; whether every name of it was bound."""
        if value is None:
            return False
        if isinstance(target, ast.Name):
            if counts.get(target.id, 0) != 1:
                return False
            env[target.id] = value
            return True
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                return False
            if isinstance(value, _Pack):
                if len(value.items) != len(target.elts):
                    return False
                # A position of no table (enumerate's index) binds a plain value.
                return all(
                    [
                        v is None or self.bind(t, v, env, counts)
                        for t, v in zip(target.elts, value.items, strict=True)
                    ]
                )
            bound = [self.bind(t, value.step(i), env, counts) for i, t in enumerate(target.elts)]
            return all(bound)
        return False

    def _binding(
        self, target: ast.expr, chains: list[ast.expr], value: _Value, env: dict, counts: dict
    ) -> None:
        """A binding from table chains: its chains are no uses when every name was bound."""
        if self.bind(target, value, env, counts):
            self.bound.update(node_key(c) for c in chains)

    # -------------------------------------------------------------- functions

    def parametrize(self, function: Any, qualname: str, counts: dict) -> dict[str, _Value]:
        decorators = [d for d in function.decorator_list if is_parametrize(d)]
        if not decorators:
            return {}
        tables = {n: self.out.tables[k] for n, k in self.module_names.items()}
        marks = _host_marks(decorators, tables)
        labels = _labels(marks) if marks is not None else None
        if labels is None or len(set(labels)) != len(labels):
            self.out.unlabelled = True
            return {}
        env: dict[str, _Value] = {}
        keys, rows = [], []
        unbound = []
        for n, call in enumerate(decorators):
            names = _eval(call.args[0])
            names = [s.strip() for s in names.split(",")] if isinstance(names, str) else names
            values = call.args[1]
            if isinstance(values, ast.Name) and values.id in self.module_names:
                key = self.module_names[values.id]
                self.bound.add(node_key(values))
            else:
                key = f"@{qualname}#{n}"
                self._add(key, call.args, 1)
            keys.append(key)
            rows.append(self.out.tables[key])
            for i, name in enumerate(names):
                origin = Origin(key, (STAR,) if len(names) == 1 else (STAR, i))
                if counts.get(str(name)) == 1:
                    env[str(name)] = origin
                else:
                    unbound.append(origin)
        self.out.bad += unbound
        self.out.decorated.append(_Decorated(qualname, decorators, keys, rows, labels))
        return env

    def function(self, function: Any, qualname: str, klass: str | None) -> None:
        counts = _bindings(function)
        env: dict[str, Any] = dict(self.parametrize(function, qualname, counts))
        env[" locals"] = set(counts)
        body = ast.Module(function.body, [])
        for _ in range(4):  # bindings in nested blocks may come after their uses in walk order
            before = dict(env)
            for node in ast.walk(body):
                chains: list[ast.expr] = []
                if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    found = self.element(node.iter, env, klass, chains)
                    self._binding(node.target, chains, found, env, counts)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    name = _single_target(node)
                    if name is not None and counts.get(name) == 1 and self._table_value(node.value):
                        key = f"{qualname}:{name}:{node.lineno}"
                        if key not in self.out.tables:
                            self._add(key, node, "value")
                        env[name] = Origin(key)
                        continue
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    found = self.origin(node.value, env, klass)
                    if len(targets) == 1 and found is not None:
                        self._binding(targets[0], [node.value], found, env, counts)
            if env == before:
                break
        loop_names: list[str] = [
            n.id
            for loop in ast.walk(body)
            if isinstance(loop, (ast.For, ast.AsyncFor, ast.comprehension))
            for n in ast.walk(loop.target)
            if isinstance(n, ast.Name)
        ]
        loops = frozenset(
            n for n in set(loop_names) if counts.get(n, 0) > 1 and loop_names.count(n) == counts[n]
        )
        self.loop_origins = {}
        self.ambiguous = set()
        self.walk_uses(function.body, env, klass, loops)
        # Decorators and defaults run where the function is defined.
        self.walk_uses([*function.decorator_list, function.args], {}, klass)
        for name in self.ambiguous:
            self.out.bad += self.loop_origins.get(name, [])

    def walk_uses(
        self,
        nodes: list[Any],
        env: dict[str, Any],
        klass: str | None,
        loops: frozenset[str] = frozenset(),
    ) -> None:
        """Record every read of a table (an origin chain that is not a binding).

        ``loops``: names bound only as loop targets, more than once: inside each loop they
        are that loop's element; read anywhere else, whatever they held stays.
        """
        for node in nodes:
            self._walk(node, env, klass, loops)

    def _scope(
        self,
        target: ast.expr,
        iterable: ast.expr,
        env: dict[str, Any],
        klass: str | None,
        loops: frozenset[str],
    ) -> dict[str, Any]:
        """The names a loop binds, over ``env``; walks its iterable."""
        chains: list[ast.expr] = []
        value = self.element(iterable, env, klass, chains)
        names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
        inner = dict(env)
        for name in names:
            inner[name] = None  # bound here (to a plain value unless the table's)
        if self.bind(target, value, inner, dict.fromkeys(names, 1)):
            self.bound.update(node_key(c) for c in chains)
        for name in names:
            if name in loops and inner.get(name) is not None:
                self.loop_origins.setdefault(name, []).extend(_origins(inner[name]))
        self._walk(iterable, env, klass, loops)
        return inner

    def _walk(
        self, node: Any, env: dict[str, Any], klass: str | None, loops: frozenset[str]
    ) -> None:
        if loops and isinstance(node, (ast.For, ast.AsyncFor)):
            inner = self._scope(node.target, node.iter, env, klass, loops)
            self.walk_uses(node.body, inner, klass, loops)
            self.walk_uses(node.orelse, env, klass, loops)
            return
        if loops and isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = env
            for generator in node.generators:
                inner = self._scope(generator.target, generator.iter, inner, klass, loops)
                self.walk_uses(generator.ifs, inner, klass, loops)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            self.walk_uses(parts, inner, klass, loops)
            return
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, ast.Load
        ):
            found = self.origin(node, env, klass)
            if isinstance(found, Origin):
                if node_key(node) not in self.bound:
                    self.out.uses[node_key(node)] = found
                if isinstance(node, ast.Subscript):
                    self._walk(node.slice, env, klass, loops)
                return
            if isinstance(found, _Pack):  # a name bound to a whole zip/items element
                self.out.bad += _origins(found)
                return
            if isinstance(node, ast.Name) and node.id in loops and node.id not in env:
                self.ambiguous.add(node.id)
            if isinstance(node, ast.Attribute):
                # Read through another object (``type(self).ROWS``, the module itself).
                self.out.blocked |= self.attr_tables.get(node.attr, set())
                if node.attr in self.module_names:
                    self.out.blocked.add(self.module_names[node.attr])
            if isinstance(node, ast.Name) and klass is not None:
                in_class = self.class_attrs.get(klass, {}).get(node.id)
                if in_class:
                    self.out.blocked.add(in_class)
        if (
            isinstance(node, ast.Call)
            and dotted(node.func) == "len"
            and len(node.args) == 1
            and self._container(self.origin(node.args[0], env, klass))
        ):
            return  # placeholders keep a table's shape
        for child in ast.iter_child_nodes(node):
            self._walk(child, env, klass, loops)

    def _container(self, origin: Any) -> bool:
        """Whether ``origin`` reads containers, whose length placeholders keep.

        A text's length is its own: ``len(self.expected)`` is a read (att32i).
        """
        if not isinstance(origin, Origin) or origin.table not in self.out.tables:
            return False
        nodes = leaves(self.out.tables[origin.table], origin.path) or []
        return bool(nodes) and all(
            isinstance(n, (ast.List, ast.Tuple, ast.Set, ast.Dict)) for n in nodes
        )

    def run(self) -> Tables:
        self.find_tables()
        if self.dynamic():
            self.out.dynamic = True
            self.out.blocked |= set(self.out.tables)
            self.module_names.clear()
            self.class_attrs.clear()
        for statement in self.tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(statement, statement.name, None)
            elif isinstance(statement, ast.ClassDef):
                for member in statement.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.function(member, f"{statement.name}::{member.name}", statement.name)
                    else:
                        self.walk_uses([member], {}, statement.name)
                self.walk_uses([*statement.decorator_list, *statement.bases], {}, None)
            else:
                self.walk_uses([statement], {}, None)
        return self.out


def _origins(value: _Value) -> list[Origin]:
    if isinstance(value, Origin):
        return [value]
    if isinstance(value, _Pack):
        return [o for item in value.items for o in _origins(item)]
    return []


def _single_target(statement: ast.AST) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        return statement.target.id if isinstance(statement.target, ast.Name) else None
    return None


def analyse(tree: ast.Module) -> Tables:
    """The tables of test module ``tree`` and every read of them (see the module docstring).

    A module too deeply nested to follow has none (nothing of it moves).
    """
    try:
        return _Analysis(tree).run()
    except RecursionError:
        return Tables()
