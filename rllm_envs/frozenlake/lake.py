r"""FrozenLake task rules as text: action parsing, board rendering and the oracle.

A plain module with no Gymnasium import; the dynamics themselves are Gymnasium's
(see :mod:`rllm_envs.frozenlake.frozenlake_env`), and :func:`optimal_policy` plans over
Gymnasium's transition table ``P``.

Action parsing rules (:func:`parse_action`), applied in order; the first that finds
something decides:

1. Only the answer part is read (:func:`rllm_envs.text.answer_text`: the text after the last
   ``</think>``; a reply cut inside an unclosed ``<think>`` has none).
2. The last ``<action>...</action>`` tag, else the last ``\boxed{...}``, else the last
   ``action:`` / ``answer:`` / ``move:`` label: its content must be one direction.
3. The whole reply, stripped of spaces, quotes, ``*``, ``.`` and brackets, is one direction
   token: a word (``Left``, ``down``, any case), a letter (``L``/``D``/``R``/``U``), an arrow
   (``←↓→↑``) or Gymnasium's action id (``0``=Left, ``1``=Down, ``2``=Right, ``3``=Up).
4. The last whole direction *word* (left/down/right/up, or west/south/east/north, any case)
   anywhere in the reply that it does not rule out or put aside (``Right, not Left``,
   ``don't go up``, ``instead of down``, ``because down leads to a hole``, ``down would be a
   hole``, ``then down``, ``3 moves left``).

A tag's or label's content may also be a few words holding a direction (``Answer: I will
move right``, ``<action>Go to the right</action>``): its first one not put aside, unless a
number is there (a move counter). Emoji arrows (``⬅️⬇️➡️⬆️``), compass names and
``rightward(s)``-like tokens count as their directions.

A token is whole: an action id is a bare digit, never a digit of a number (``32``, ``3.5``,
``-3``, ``.3``, ``31 steps``, ``3rd``), and a word or letter ends where a word does
(``R2``, ``Right3`` are no action). Inside a tag or label, a leading token followed by text
counts (``Answer: Right, because...``, ``\boxed{2, to the right}``).

Anything else is unparsable: the step is a normal transition with ``invalid_action`` set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from rllm_envs.text import answer_text, tag_contents

__all__ = [
    "ACTION_NAMES",
    "MAX_MAP_SIZE",
    "parse_action",
    "render_board",
    "optimal_policy",
    "progress_potentials",
    "validate_map",
]

#: Most rows and columns of a map: the largest random map (``size`` 32) the env generates.
MAX_MAP_SIZE = 32

#: Gymnasium's FrozenLake action ids, in order.
ACTION_NAMES = ("Left", "Down", "Right", "Up")

_TOKENS: dict[str, int] = {}
for _i, _name in enumerate(ACTION_NAMES):
    _TOKENS[_name.lower()] = _i
    _TOKENS[_name[0].lower()] = _i
    _TOKENS[str(_i)] = _i
_TOKENS.update({"←": 0, "↓": 1, "→": 2, "↑": 3, "⬅": 0, "⬇": 1, "➡": 2, "⬆": 3})
# Compass names, as a model trained on maps writes them.
_TOKENS.update({"west": 0, "south": 1, "east": 2, "north": 3})
for _i, _name in enumerate(ACTION_NAMES):  # `rightward`, `downwards`
    _TOKENS[f"{_name.lower()}ward"] = _TOKENS[f"{_name.lower()}wards"] = _i

# ``<action>`` blocks are read by :func:`tag_contents` (linear; the regex was quadratic).
_TAGGED = (
    "action",
    re.compile(r"\\boxed\{([^{}]*)\}"),
    re.compile(r"\b(?:action|answer|move)\s*[:=]\s*([^\n]{0,40})", re.IGNORECASE),
)
_STRIP = " \t\r\n\"'`*._-!()[]{}<>\ufe0f"
_WORD = re.compile(r"\b(left|down|right|up|west|south|east|north)\b", re.IGNORECASE)
# A direction word the reply rules out or puts aside ("Right, not Left", "don't go up",
# "instead of down", "because down leads to a hole", "down would be a hole", "then down",
# "3 moves left"): not its action. Read in a few characters around the word.
_NEGATED = re.compile(
    r"(?:\bnot|\bnever|\bavoid|n't|\bno|\binstead of|\bthan|\bbecause|\bsince|\bthen"
    r"|\bnext turn\b.*|\bafter that|\d+\s+(?:moves?|turns?|steps?|tries))\s+"
    r"(?:(?:i'?ll\s+|i\s+will\s+)?(?:go(?:ing)?|mov(?:e|ing)|step(?:ping)?)\s+)?$",
    re.IGNORECASE,
)
_ASIDE_AFTER = re.compile(
    r"^\W{0,3}\s*(?:would|will\s+be|leads?|hits?|is\s+(?:blocked|a\s+hole|bad|unsafe)|later"
    r"|twice|next)\b",
    re.IGNORECASE,
)
# A verb before the direction in a label ("Answer: move right").
_VERB = re.compile(r"^[\s\"'`*]*(?:move|go|step|walk|head)\s+", re.IGNORECASE)
# A leading whole token: a word, a letter, an arrow or a digit, not followed by more of a word
# or a number (a move counter's "32" is not action 3).
_FIRST_TOKEN = re.compile(r"^[\s\"'`*]*([A-Za-z]+|[0-3←↓→↑])(?!\w|[.,]\d)")
# Every number in a text, with its sign and decimal part: an action id must be a bare digit.
_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d+)*|[.,]\d+)")


def _token(text: str) -> int | None:
    token = text.strip(_STRIP).lower()
    if token.isdigit() and _NUMBER.findall(text) != [token]:
        return None  # a signed or decimal number ("-3", ".3"), not an action id
    return _TOKENS.get(token)


_DIGIT = re.compile(r"\d")


def _aside(text: str, word: re.Match[str]) -> bool:
    """Whether the reply rules out or puts aside direction ``word`` (:data:`_NEGATED`)."""
    before = text[max(0, word.start() - 24) : word.start()]
    after = text[word.end() : word.end() + 24]
    return bool(_NEGATED.search(before) or _ASIDE_AFTER.match(after))


#: Direction words looked at, at most, for the one a reply chose (each is checked for being
#: put aside: a 256K-character reply of them cost 0.4 s of CPU a step, s38 att38e).
_MAX_CANDIDATES = 256


def _chosen(text: str, words: Iterable[re.Match[str]]) -> re.Match[str] | None:
    """The first of ``words`` (direction-word matches, in the order to try) not put aside."""
    for count, match in enumerate(words):
        if count >= _MAX_CANDIDATES:
            return None
        if not _aside(text, match):
            return match
    return None


def parse_action(text: str) -> tuple[int | None, str | None]:
    """Parse a FrozenLake action from free text (rules in the module docstring).

    Returns:
        ``(action_id, None)`` on success, ``(None, reason)`` if no action could be read.
    """
    text = answer_text(text)
    for pattern in _TAGGED:
        matches = tag_contents(text, pattern) if isinstance(pattern, str) else pattern.findall(text)
        if matches:
            content = matches[-1]
            content = _VERB.sub("", content, count=1)
            action = _token(content)
            if action is None:
                # "Answer: Right, because..." -- accept a leading direction token.
                lead = _FIRST_TOKEN.match(content)
                action = _token(lead.group(1)) if lead else None
            if action is None and not _DIGIT.search(content):
                # A label's or tag's words: its first direction word it does not put aside
                # ("Answer: I will move right", "<action>Go to the right</action>"); not
                # where a number is (a move counter: "21 to the right", "3 moves left").
                named = _chosen(content, _WORD.finditer(content))
                action = _TOKENS[named.group(1).lower()] if named else None
            if action is not None:
                return action, None
            shown = content.strip()[:40]
            return None, (
                f"'{shown}' is not an action. Use one of: " + ", ".join(ACTION_NAMES) + "."
            )
    action = _token(text)
    if action is not None:
        return action, None
    last = _chosen(text, reversed(list(_WORD.finditer(text))))
    if last is not None:
        return _TOKENS[last.group(1).lower()], None
    if not text.strip():
        return None, "The reply was empty. Answer with one of: " + ", ".join(ACTION_NAMES) + "."
    return None, (
        "Could not find an action in the reply. Answer with one of: "
        + ", ".join(ACTION_NAMES)
        + "."
    )


def has_safe_path(rows: Sequence[str]) -> bool:
    """Whether the goal can be reached from the start without stepping on a hole."""
    nrow, ncol = len(rows), len(rows[0])
    start = next((r, c) for r in range(nrow) for c in range(ncol) if rows[r][c] == "S")
    seen, frontier = {start}, [start]
    while frontier:
        r, c = frontier.pop()
        if rows[r][c] == "G":
            return True
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if 0 <= nr < nrow and 0 <= nc < ncol and (nr, nc) not in seen and rows[nr][nc] != "H":
                seen.add((nr, nc))
                frontier.append((nr, nc))
    return False


def progress_potentials(rows: Sequence[str]) -> list[float]:
    """A potential per cell (row-major) for potential-based shaping towards the goal.

    ``-d / D`` on a cell ``d`` safe moves from the goal (``D`` the farthest such cell's
    distance): 0 on the goal, -1 on the farthest cell, on a cell with no safe path and on a
    hole. A step's shaping is the potential after it minus the one before: an episode's
    shaping sums to its last cell's potential minus its start's, so a fall nets no more
    than any walk that stays on the ice (it ends at -1, the least), and nothing beats
    reaching the goal (Ng, Harada and Russell, 1999: the optimal policy is unchanged).
    """
    nrow, ncol = len(rows), len(rows[0])
    goal = next((r, c) for r in range(nrow) for c in range(ncol) if rows[r][c] == "G")
    distance = {goal: 0}
    frontier = [goal]
    for r, c in frontier:  # breadth first: the list grows as it is read
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if 0 <= nr < nrow and 0 <= nc < ncol and (nr, nc) not in distance:
                if rows[nr][nc] != "H":
                    distance[(nr, nc)] = distance[(r, c)] + 1
                    frontier.append((nr, nc))
    farthest = max(max(distance.values()), 1)
    return [
        -distance[(r, c)] / farthest if (r, c) in distance else -1.0
        for r in range(nrow)
        for c in range(ncol)
    ]


def random_map(rng: np.random.Generator, size: int, hole_density: float) -> list[str]:
    """A ``size`` x ``size`` map with the start, the goal and the holes all drawn from ``rng``.

    Start and goal land anywhere, at least ``size - 1`` steps apart, so no fixed sequence of
    moves (one map's path replayed on another) reaches the goal more often than reading the
    board would; the map always has a safe path.
    """
    if size < 2:
        raise ValueError(f"Expects a map size >= 2, actual: {size}.")
    while True:
        start, goal = (int(i) for i in rng.choice(size * size, size=2, replace=False))
        (sr, sc), (gr, gc) = divmod(start, size), divmod(goal, size)
        if abs(sr - gr) + abs(sc - gc) < size - 1:
            continue
        grid = np.where(rng.random((size, size)) < hole_density, "H", "F")
        grid[sr, sc], grid[gr, gc] = "S", "G"
        rows = ["".join(row) for row in grid]
        if has_safe_path(rows):
            return rows


def validate_map(rows: Sequence[str]) -> list[str]:
    """Check a map (rows of ``S``/``F``/``H``/``G``) and return it as a list of strings.

    A map has at most :data:`MAX_MAP_SIZE` rows and columns, the largest the random-map
    generator makes (``size`` in ``[2, 32]``): building Gymnasium's transition table and the
    oracle's plan grow with the cells (and their square), so a larger map would cost seconds
    and gigabytes per reset. Each row is a string (Gymnasium's ``bytes`` rows are decoded).

    Raises:
        ValueError: If the map is not a list of rows, is empty, larger than
            ``MAX_MAP_SIZE`` x ``MAX_MAP_SIZE``, ragged, has other characters, or not exactly
            one ``S`` and at least one ``G``.
    """
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence | np.ndarray):
        raise ValueError(
            f"Expects a map as a list of row strings, e.g. ['SFFF', 'FHFH', 'FFFH', 'HFFG'], "
            f"actual type: {type(rows).__name__}."
        )
    if len(rows) > MAX_MAP_SIZE:
        raise ValueError(f"Expects at most {MAX_MAP_SIZE} map rows, actual: {len(rows):,}.")
    checked = []
    for row in rows:
        if isinstance(row, bytes):
            row = row.decode("ascii", "replace")
        if not isinstance(row, str):
            raise ValueError(f"Expects each map row to be a string, actual: {type(row).__name__}.")
        if len(row) > MAX_MAP_SIZE:
            raise ValueError(
                f"Expects at most {MAX_MAP_SIZE} map columns, actual: a row of {len(row):,}."
            )
        checked.append(row)
    rows = checked
    if not rows or not rows[0]:
        raise ValueError("Expects a non-empty map, e.g. ['SFFF', 'FHFH', 'FFFH', 'HFFG'].")
    if any(len(r) != len(rows[0]) for r in rows):
        raise ValueError(f"Expects all map rows to have the same length, actual: {rows}.")
    cells = "".join(rows)
    if set(cells) - set("SFHG"):
        raise ValueError(
            f"Expects map cells in 'SFHG', actual extra: {sorted(set(cells) - set('SFHG'))}."
        )
    if cells.count("S") != 1 or "G" not in cells:
        raise ValueError("Expects exactly one start 'S' and at least one goal 'G' in the map.")
    return rows


def render_board(rows: Sequence[str], position: int) -> str:
    """Render the map with the player ``P`` at ``position`` (row-major), with coordinates."""
    ncol = len(rows[0])
    width = len(str(max(len(rows), ncol)))
    header = " " * (width + 2) + " ".join(str(c + 1).rjust(width) for c in range(ncol))
    lines = [header]
    for r, row in enumerate(rows):
        cells = ["P" if r * ncol + c == position else ch for c, ch in enumerate(row)]
        lines.append(str(r + 1).rjust(width) + "  " + " ".join(x.rjust(width) for x in cells))
    return "\n".join(lines)


def optimal_policy(
    transitions: Mapping[int, Mapping[int, Sequence[tuple[float, int, float, bool]]]],
    n_states: int,
    gamma: float = 0.95,
    tol: float = 1e-10,
) -> np.ndarray:
    """Value iteration over a Gymnasium-style table ``P[s][a] = [(p, s', r, done), ...]``.

    Maximises the discounted probability of reaching reward, so with deterministic moves the
    policy follows a shortest safe path. Ties go to the lowest action id.

    Returns:
        An array of the best action id per state.
    """
    n_actions = 4
    trans = np.zeros((n_states, n_actions, n_states))
    reward = np.zeros((n_states, n_actions))
    cont = np.ones((n_states, n_actions, n_states))
    for s in range(n_states):
        for a in range(n_actions):
            for p, s2, r, done in transitions[s][a]:
                trans[s, a, s2] += p
                reward[s, a] += p * r
                if done:
                    cont[s, a, s2] = 0.0
    weighted = trans * cont
    values = np.zeros(n_states)
    for _ in range(10_000):
        q = reward + gamma * weighted @ values
        new = q.max(axis=1)
        if np.max(np.abs(new - values)) < tol:
            values = new
            break
        values = new
    q = reward + gamma * weighted @ values
    # Round so float noise cannot break ties differently across machines.
    return np.argmax(np.round(q, 12), axis=1)
