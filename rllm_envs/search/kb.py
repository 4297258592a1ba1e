"""A procedurally generated knowledge base of fictional entities, and questions about it.

Everything here is invented from seeds -- countries, cities on rivers, people born in those
cities, companies they founded -- so no pretrained model knows these facts. Facts about one
entity are spread over several passages (a person's early life and career are separate), and
multi-hop questions chain entities (the country of the birthplace of the founder of a
company).

The world is a pure function of ``(kb_seed, task_seed, size)``: each task seed plays its own
world, so answers memorised while training on one seed are no use on another. Worlds of the
evaluation universe (task seeds from :data:`rllm_envs.tasks.EVAL_SEED_START` up) are built
from name words that no training world can use (:func:`word_universe`), so an evaluation
world shares no name, and therefore no question, entity answer or passage, with any training
world: a policy has to search it.

:func:`build_kb` makes the knowledge base; :func:`kb_passages` its corpus;
:func:`make_question` one question (a task record) from a ``numpy`` generator, with the search
queries an expert would issue (``hops``) for the scripted oracle. No Gymnasium import.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from rllm_envs.tasks import seed_universe

__all__ = [
    "KnowledgeBase",
    "build_kb",
    "kb_passages",
    "make_question",
    "word_universe",
    "QUESTION_KINDS",
]

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "gr", "kr", "st", "th", "sh", "vl", "zh"]  # fmt: skip
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ai", "ei", "ia", "ou", "y"]
_CODAS = ["", "", "", "n", "r", "l", "s", "x", "th", "m", "nd", "rk"]
_OCCUPATIONS = ["cartographer", "glassblower", "astronomer", "engineer", "botanist",
                "composer", "shipwright", "economist", "physician", "architect"]  # fmt: skip
_PRODUCTS = ["clockwork instruments", "river barges", "optical lenses", "textile looms",
             "seed varieties", "printing presses", "mineral dyes", "weather balloons"]  # fmt: skip


@dataclass(frozen=True)
class KnowledgeBase:
    """The entities of a generated world (plain lists of dicts, JSON-able).

    Attributes:
        countries: ``{"name", "capital"}``.
        cities: ``{"name", "country", "river", "founded"}``.
        people: ``{"name", "born_city", "born_year", "occupation", "company"}``.
        companies: ``{"name", "founder", "hq_city", "founded", "product"}``.
    """

    countries: list[dict[str, Any]]
    cities: list[dict[str, Any]]
    people: list[dict[str, Any]]
    companies: list[dict[str, Any]]


def _word(rng: np.random.Generator, syllables: int) -> str:
    text = "".join(
        _ONSETS[rng.integers(len(_ONSETS))]
        + _VOWELS[rng.integers(len(_VOWELS))]
        + _CODAS[rng.integers(len(_CODAS))]
        for _ in range(syllables)
    )
    return text.capitalize()


def word_universe(word: str) -> str:
    """The universe (``"train"`` or ``"eval"``) whose worlds may use a name word (stable hash)."""
    digest = hashlib.blake2b(word.lower().encode("utf-8"), digest_size=8).digest()
    return "eval" if int.from_bytes(digest, "big") % 4 == 0 else "train"


class _Namer:
    """Unique invented names of one universe's words: no two entities share a name or a word."""

    def __init__(self, rng: np.random.Generator, universe: str) -> None:
        self.rng = rng
        self.universe = universe
        self.words: set[str] = set()

    def __call__(self, words: int, syllables: tuple[int, int] = (2, 4)) -> str:
        while True:
            parts = [
                _word(self.rng, int(self.rng.integers(syllables[0], syllables[1])))
                for _ in range(words)
            ]
            keys = {p.lower() for p in parts}
            own = all(word_universe(k) == self.universe for k in keys)
            if own and len(keys) == words and not keys & self.words:
                self.words |= keys
                return " ".join(parts)


@functools.lru_cache(maxsize=8)
def build_kb(kb_seed: int = 0, size: int = 200, task_seed: int = 0) -> KnowledgeBase:
    """Generate the knowledge base of ``size`` people (and proportionate places, companies).

    Args:
        kb_seed: Seed of the world; the same seeds give the same world everywhere.
        size: Number of people (>= 10); there are ``size // 4`` cities, ``size // 25 + 2``
            countries and ``size // 2`` companies.
        task_seed: The task seed the world is played with: each seed has its own world, and
            the seeds of the evaluation universe name their entities with words no
            training world uses (:func:`word_universe`).
    """
    rng = np.random.default_rng(np.random.SeedSequence([kb_seed, 7_477, task_seed]))
    name = _Namer(rng, seed_universe(task_seed))
    n_countries, n_cities, n_companies = size // 25 + 2, max(size // 4, 4), size // 2
    rivers = [name(1) for _ in range(max(n_cities // 2, 2))]
    countries: list[dict[str, Any]] = [{"name": name(1), "capital": ""} for _ in range(n_countries)]
    cities: list[dict[str, Any]] = []
    for i in range(n_cities):
        country = countries[i % n_countries]  # every country has a city
        cities.append(
            {
                "name": name(1),
                "country": country["name"],
                "river": rivers[int(rng.integers(len(rivers)))],
                "founded": int(rng.integers(900, 1700)),
            }
        )
        if not country["capital"]:
            country["capital"] = cities[-1]["name"]
    people: list[dict[str, Any]] = [
        {
            "name": name(2, (2, 3)),
            "born_city": cities[int(rng.integers(n_cities))]["name"],
            "born_year": int(rng.integers(1780, 1990)),
            "occupation": _OCCUPATIONS[int(rng.integers(len(_OCCUPATIONS)))],
            "company": None,
        }
        for _ in range(size)
    ]
    founders = rng.choice(size, size=n_companies, replace=False)
    companies = []
    for i in founders:
        person = people[int(i)]
        company = {
            "name": name(1) + " " + ["Works", "Company", "Guild", "Foundry"][int(rng.integers(4))],
            "founder": person["name"],
            "hq_city": cities[int(rng.integers(n_cities))]["name"],
            "founded": int(person["born_year"]) + int(rng.integers(20, 50)),
            "product": _PRODUCTS[int(rng.integers(len(_PRODUCTS)))],
        }
        person["company"] = company["name"]
        companies.append(company)
    return KnowledgeBase(countries, cities, people, companies)


def kb_passages(kb: KnowledgeBase) -> list[dict[str, str]]:
    """The corpus of a knowledge base: ``{"id", "title", "text"}`` passages."""
    passages: list[dict[str, str]] = []
    for c in kb.countries:
        passages.append(
            {
                "id": f"country-{len(passages)}",
                "title": c["name"],
                "text": f"{c['name']} is a country whose capital is {c['capital']}. Its "
                "people are known for their long winters and elaborate festivals.",
            }
        )
    for c in kb.cities:
        passages.append(
            {
                "id": f"city-{len(passages)}",
                "title": c["name"],
                "text": f"{c['name']} is a city in {c['country']}. It was founded in "
                f"{c['founded']} on the banks of the {c['river']} river, which still flows "
                "through its old town.",
            }
        )
    for p in kb.people:
        passages.append(
            {
                "id": f"person-{len(passages)}",
                "title": f"{p['name']} (early life)",
                "text": f"{p['name']} was born in {p['born_year']} in the city of "
                f"{p['born_city']} and grew up there.",
            }
        )
        article = "an" if p["occupation"][0] in "aeiou" else "a"
        career = f"{p['name']} worked as {article} {p['occupation']}."
        if p["company"]:
            career += f" Later in life {p['name']} founded {p['company']}."
        passages.append({"id": f"person-{len(passages)}", "title": p["name"], "text": career})
    for c in kb.companies:
        passages.append(
            {
                "id": f"company-{len(passages)}",
                "title": c["name"],
                "text": f"{c['name']} is a maker of {c['product']} headquartered in "
                f"{c['hq_city']}. It was established in {c['founded']} by {c['founder']}.",
            }
        )
    return passages


#: question kind -> number of hops (passages to chain).
QUESTION_KINDS: dict[str, int] = {
    "person_city": 1,
    "company_year": 1,
    "city_river": 1,
    "company_founder": 1,
    "city_country": 1,
    "person_country": 2,
    "founder_city": 2,
    "hq_river": 2,
    "person_company_year": 2,
    "founder_country": 3,
    "founder_river": 3,
}
#: difficulty -> the hop counts its questions use.
DIFFICULTY_HOPS: dict[int, tuple[int, ...]] = {1: (1,), 2: (1, 2), 3: (2,), 4: (2, 3), 5: (3,)}


def make_question(
    rng: np.random.Generator, *, kb: KnowledgeBase, difficulty: int
) -> dict[str, Any]:
    """One question about ``kb``: ``question``, ``answers``, ``hops`` (oracle queries), ``kind``.

    ``answer`` is the reference answer (``answers[0]``), which answer balancing reads
    (:func:`rllm_envs.tasks.answer_label`).
    """
    hops_allowed = DIFFICULTY_HOPS[difficulty]
    kinds = [k for k, h in QUESTION_KINDS.items() if h in hops_allowed]
    kind = kinds[int(rng.integers(len(kinds)))]
    city = {c["name"]: c for c in kb.cities}
    person = {p["name"]: p for p in kb.people}

    def pick(items: list[dict[str, Any]]) -> dict[str, Any]:
        return items[int(rng.integers(len(items)))]

    founders = [p for p in kb.people if p["company"]]
    if kind == "person_city":
        p = pick(kb.people)
        q, a, hops = f"In which city was {p['name']} born?", p["born_city"], [f"{p['name']} born"]
    elif kind == "company_year":
        c = pick(kb.companies)
        q, a = f"In what year was {c['name']} established?", str(c["founded"])
        hops = [f"{c['name']} established"]
    elif kind == "city_river":
        c = pick(kb.cities)
        q, a, hops = f"Which river flows through {c['name']}?", c["river"], [f"{c['name']} river"]
    elif kind == "company_founder":
        c = pick(kb.companies)
        q, a, hops = f"Who founded {c['name']}?", c["founder"], [f"{c['name']} founded by"]
    elif kind == "city_country":
        c = pick(kb.cities)
        q, a, hops = f"In which country is {c['name']}?", c["country"], [f"{c['name']} country"]
    elif kind == "person_country":
        p = pick(kb.people)
        bc = city[p["born_city"]]
        q, a = f"In which country is the city where {p['name']} was born?", bc["country"]
        hops = [f"{p['name']} born", f"{bc['name']} country"]
    elif kind == "founder_city":
        c = pick(kb.companies)
        q, a = (
            f"In which city was the founder of {c['name']} born?",
            person[c["founder"]]["born_city"],
        )
        hops = [f"{c['name']} founded by", f"{c['founder']} born"]
    elif kind == "hq_river":
        c = pick(kb.companies)
        q = f"Which river flows through the city where {c['name']} is headquartered?"
        a, hops = (
            city[c["hq_city"]]["river"],
            [f"{c['name']} headquartered", f"{c['hq_city']} river"],
        )
    elif kind == "person_company_year":
        p = pick(founders)
        q = f"In what year was the company founded by {p['name']} established?"
        company = next(c for c in kb.companies if c["name"] == p["company"])
        a, hops = (
            str(company["founded"]),
            [f"{p['name']} founded", f"{company['name']} established"],
        )
    elif kind == "founder_country":
        c = pick(kb.companies)
        f = person[c["founder"]]
        q = f"In which country is the birthplace of the founder of {c['name']}?"
        a = city[f["born_city"]]["country"]
        hops = [f"{c['name']} founded by", f"{f['name']} born", f"{f['born_city']} country"]
    else:  # founder_river
        c = pick(kb.companies)
        f = person[c["founder"]]
        q = f"Which river flows through the birthplace of the founder of {c['name']}?"
        a = city[f["born_city"]]["river"]
        hops = [f"{c['name']} founded by", f"{f['name']} born", f"{f['born_city']} river"]
    return {
        "question": q,
        "answer": a,
        "answers": [a],
        "hops": hops,
        "kind": kind,
        "n_hops": len(hops),
    }
