"""``python -m rllm_agents.store DB CMD``: list, show, export, import, verify, passk, ...."""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rllm_agents.error import AgentConfigError
from rllm_agents.store.damage import DamagedEpisode, DamagedMeta, DamagedStore
from rllm_agents.store.episode_store import EpisodeStore
from rllm_agents.store.schema import SCHEMA_VERSION, StoredEpisode
from rllm_agents.store.transcript import transcript
from rllm_agents.store.upgrade import UPGRADE_TRUST, upgrade
from rllm_envs.utils import to_jsonable


def _short(value: Any, width: int = 12) -> str:
    text = "-" if value is None else str(value)
    # One line, no terminal controls: a finish of "\n2 ... reward 1" printed a row of its
    # own, and ANSI codes erased a real one (s40 att40p F4).
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", help="env id, e.g. rllm/Countdown-v1")
    parser.add_argument("--model")
    parser.add_argument("--run")
    parser.add_argument("--task", help="task id")
    parser.add_argument("--min-reward", type=float)
    parser.add_argument("--max-reward", type=float)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--correct", dest="correct", action="store_true", default=None)
    group.add_argument("--incorrect", dest="correct", action="store_false")


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("env", "model", "run", "task", "min_reward", "max_reward", "correct")
    return {k: getattr(args, k) for k in keys if getattr(args, k) is not None}


def _format_float(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"


def _strict_json(value: Any) -> str:
    """``value`` as strict JSON: an infinite reward as the string ``"inf"``.

    ``Infinity`` is not JSON: a strict parser of ``list --json`` failed on it (s39 att39d F3).
    """
    return json.dumps(to_jsonable(value, finite=True))


def _episode(store: EpisodeStore, text: str) -> StoredEpisode:
    """The episode ``show`` names: a row id, or a hash prefix of 6+ characters.

    Six digits or more may be either (a hash prefix is all digits about one time in 16 at
    six characters): the one that finds an episode is meant, and where both find a different
    one, or the prefix finds several, the answer is neither (s40 att40e F2, att40l F1: such a
    prefix was read as a row id, and another episode was shown with exit code 0).
    """
    if not (text.isascii() and text.isdigit()) or int(text) >= 2**63:
        return store.get(text)  # not a row id SQLite holds (att40m F3: a traceback)
    if len(text) < 6:
        return store.get(int(text))
    found: dict[int, StoredEpisode] = {}
    missed: KeyError | None = None
    for key in (int(text), text):
        try:
            episode = store.get(key)
        except KeyError as e:
            if key == text and not str(e.args[0]).startswith("No episode"):
                raise  # a prefix of several episodes (or one hash under several runs)
            missed = e
        else:
            found[episode.id] = episode
    if len(found) > 1:
        raise KeyError(
            f"{text!r} is both row id {text} and a hash prefix of episode "
            f"{next(i for i in found if i != int(text))}: give more characters of the hash"
        )
    if found:
        return next(iter(found.values()))
    assert missed is not None
    raise missed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rllm_agents.store DB COMMAND`` (list, show, export, import, verify, ...)."""
    parser = argparse.ArgumentParser(
        prog="python -m rllm_agents.store", description="Inspect an rllm episode store."
    )
    parser.add_argument("db", type=Path, help="the SQLite episode store")
    parser.add_argument(
        "--key",
        type=Path,
        help="the store's key file (default: $RLLM_STORE_KEY, else DB.key next to it)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("list", help="one line per episode")
    _add_filters(p)
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    p = commands.add_parser("show", help="a readable transcript of one episode")
    p.add_argument("episode", help="row id or hash prefix (6+ characters)")
    p.add_argument("--tokens", action="store_true", help="also print token ids and loss mask")
    p.add_argument("--json", action="store_true", help="the stored record as JSON")
    p = commands.add_parser("export", help="write matching episodes to Parquet")
    p.add_argument("out", type=Path)
    _add_filters(p)
    p = commands.add_parser("import", help="store the episodes of a Parquet file")
    p.add_argument("file", type=Path)
    p.add_argument("--run", help="run name for rows without one")
    commands.add_parser(
        "verify",
        help="check every episode against its MAC and hash, and that none is missing; and "
        "the pending samples and pins",
    )
    p = commands.add_parser("passk", help="unbiased pass@k per run and env")
    p.add_argument("-k", type=int, action="append", help="k (repeatable; default 1)")
    p.add_argument(
        "--include-custom",
        action="store_true",
        help="also count episodes played on client-passed tasks (task id custom-...)",
    )
    _add_filters(p)
    p.add_argument("--json", action="store_true")
    p = commands.add_parser(
        "upgrade",
        help="upgrade a schema-version-1, -2 or -3 store in place (checks every episode first)",
    )
    p.add_argument(
        "--accept-missing",
        action="store_true",
        help="renumber the rows instead of refusing a store whose episodes have missing ids",
    )
    p.add_argument(
        "--unkeyed",
        action="store_true",
        help="upgrade a version-1 or -2 store, which never had a key (its rows are unverifiable)",
    )
    p.add_argument(
        "--shared-key",
        action="store_true",
        help="upgrade a version-3 store although other stores keep their counts beside its key",
    )
    commands.add_parser(
        "repair-mark",
        help="raise a record of episodes written that was set back, over rows whose MACs hold",
    )
    commands.add_parser(
        "keep-mark",
        help="keep a copy of the count of episodes written beside the key (detects rollback)",
    )
    args = parser.parse_args(argv)

    if args.command != "import" and not args.db.is_file():
        parser.error(f"no episode store at {args.db}")
    if args.command == "upgrade":
        try:
            n = upgrade(
                args.db,
                key=args.key,
                accept_missing=args.accept_missing,
                unkeyed=args.unkeyed,
                shared_key=args.shared_key,
            )
        except (DamagedStore, AgentConfigError, sqlite3.Error) as error:
            print(str(error), file=sys.stderr)
            return 1
        print(f"{args.db} is at schema version {SCHEMA_VERSION} ({n} episodes)")
        print(UPGRADE_TRUST)
        return 0
    try:
        store = EpisodeStore(
            args.db,
            read_only=args.command not in ("import", "repair-mark", "keep-mark"),
            key=args.key,
        )
    except (DamagedStore, AgentConfigError) as error:
        print(str(error), file=sys.stderr)
        return 1
    try:
        if args.command == "list":
            rows = list(store.summaries(limit=args.limit, offset=args.offset, **_filters(args)))
            if args.json:
                for e in rows:
                    row = {k: v for k, v in vars(e).items() if k != "trajectory"}
                    print(_strict_json(row))
                return 0
            print(
                f"{'id':>6}  {'hash':12}  {'run':12}  {'env':22}  {'model':12}  {'task':18}  "
                f"{'reward':>7}  {'ok':2}  {'turns':>5}  finish"
            )
            for e in rows:
                print(
                    f"{e.id:>6}  {e.hash[:12]}  {_short(e.run):12}  {_short(e.env_id, 22):22}  "
                    f"{_short(e.model):12}  {_short(e.task_id, 18):18}  {e.total_reward:>7.3g}  "
                    f"{'y' if e.is_correct else 'n':2}  {e.num_turns:>5}  {_short(e.finish, 24)}"
                )
            total = store.count(**_filters(args))
            print(f"{len(rows)} of {total} episodes")
        elif args.command == "show":
            try:
                episode = _episode(store, args.episode)
            except KeyError as e:
                print(str(e.args[0]), file=sys.stderr)
                return 1
            if args.json:
                assert episode.trajectory is not None
                # The record exactly (a NaN logprob as Python's JSON writes it), so that it reads
                # back equal; `list --json` is the strict view.
                print(json.dumps(episode.trajectory.to_dict(), ensure_ascii=False, indent=2))
            else:
                print(transcript(episode, tokens=args.tokens))
        elif args.command == "export":
            n = store.export_parquet(args.out, **_filters(args))
            print(f"exported {n} episodes to {args.out}")
        elif args.command == "import":
            new, dup = store.import_parquet(args.file, run=args.run)
            print(f"imported {new} new episodes ({dup} already stored) into {args.db}")
        elif args.command == "verify":
            found = store.verify()
            for problem in found:
                print(str(problem), file=sys.stderr)
            damaged = [e for e in found if isinstance(e, DamagedEpisode)]
            meta = [e for e in found if isinstance(e, DamagedMeta)]
            written = max(store.written(), max((e.id for e in damaged), default=0))
            print(f"{written - len(damaged)} of {written} episodes intact")
            if meta:
                print(
                    f"{len(meta)} damaged pending-sample or pin rows ({_short(meta[0].key, 40)}"
                    f"{' ...' if len(meta) > 1 else ''}): pass@k and pins cannot be trusted"
                )
            print(
                f"recorded as written: {store.written()}; MAC of the last episode: "
                f"{store.last_mac()[:32] or '-'} (keep both elsewhere to detect a rollback)"
            )
            return 1 if found else 0
        elif args.command == "keep-mark":
            n = store.keep_mark()
            print(f"{store._mark} keeps the count of episodes written ({n}) from now on")
        elif args.command == "repair-mark":
            old, new = store.repair_mark()
            if old == new:
                print(f"nothing to repair: no episode past the record of {old} written")
            else:
                print(f"record of episodes written raised from {old} to {new}")
        elif args.command == "passk":
            ks = args.k or [1]
            table = store.pass_at_k(ks, include_custom=args.include_custom, **_filters(args))
            if args.json:
                print(_strict_json(list(table.values())))
                return 0
            header = f"{'run':16}  {'env':24}  {'tasks':>5}  {'samples':>7}  {'pending':>7}"
            print(header + "".join(f"  {'pass@' + str(k):>8}" for k in ks))
            for row in table.values():
                line = f"{_short(row['run'], 16):16}  {_short(row['env'], 24):24}  "
                line += f"{row['tasks']:>5}  {row['samples']:>7}  {row['pending']:>7}"
                line += "".join(f"  {_format_float(row[f'pass@{k}']):>8}" for k in ks)
                print(line)
    except (DamagedEpisode, DamagedStore) as damage:  # named, never a table presented as whole
        print(str(damage), file=sys.stderr)
        return 1
    except (AgentConfigError, OSError) as refused:  # a refused export or import: one line
        print(f"{type(refused).__name__}: {refused}", file=sys.stderr)
        return 1
    finally:
        store.close()
    return 0
