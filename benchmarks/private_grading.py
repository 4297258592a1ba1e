"""Does a privately graded server's timing tell a right answer from a wrong one?

``python -m benchmarks.private_grading --out benchmarks/results/private_grading.json`` starts
one OpenEnv server per setting (``python -m rllm_adapters.serve`` with ``--score-log``; the
settings differ only in ``--score-reply-s`` and ``--score-work-s``) on a private-seed
``self_reference`` universe (ReasoningGym, answers 0-7; a right answer is graded with less
work than a wrong one), and plays the same trials against each, the settings' trials
interleaved so that other work on the machine loads them alike:

* every index's task is reset once first (a first reset is much slower than a later one);
* a trial resets index ``i`` in session A and answers it, right or wrong (pairs alternate
  which comes first, so the order does not pose as the verdict), and while A's last step is
  graded a second session B sends ``state`` messages for ``--window-ms``.

Two attackers read the trials (each an AUC over all right/wrong pairs, 0.5 = no signal, with
its z under no difference; an AUC far from 0.5 either way tells the verdict):

* ``reply``: A's own reply time (s27 att27c: the verdict by the time of replies that all
  said reward 0);
* ``neighbour``: the longest of B's replies in the window (s27 att27d: while A's thread
  grades, B's replies wait for the GIL).

The score log is read back: every right answer must be logged 1.0 and every wrong one 0.0
(else the run fails: the trials would not be what they claim).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "rllm/ReasoningGym-v0"
#: A private seed (>= 2**30: an evaluation universe), so the server searches every slot.
ENV_KWARGS = {"dataset": "self_reference", "size": 400, "task_seed": 5_812_349_871_234}
#: name -> (--score-reply-s, --score-work-s). The shipped defaults are 1 s and 0.002 s; the
#: floor here is shorter so that a run takes minutes, as long as it is longer than grading.
SETTINGS: dict[str, tuple[float, float]] = {
    "none": (0.0, 0.0),
    "floor": (0.02, 0.0),
    "floor+work": (0.02, 0.002),
}


def auc(slower: Sequence[float], faster: Sequence[float]) -> tuple[float, float]:
    """P(a value of ``slower`` exceeds one of ``faster``), ties half, and its z under none.

    The Mann-Whitney statistic over all pairs, normalised: 0.5 when the two samples come
    from one distribution; z is (AUC - 0.5) over its standard error under that hypothesis.
    """
    n1, n2 = len(slower), len(faster)
    if not n1 or not n2:
        raise ValueError("auc needs both samples")
    wins = sum((a > b) + 0.5 * (a == b) for a in slower for b in faster)
    value = wins / (n1 * n2)
    return value, (value - 0.5) / ((n1 + n2 + 1) / (12 * n1 * n2)) ** 0.5


def references(indices: int) -> list[str]:
    """The answers of the served universe's first ``indices`` tasks, made in process."""
    import rllm_envs
    from rllm_envs.tasks import search_every_slot

    search_every_slot()  # the tasks a private-seed server plays (create_app turns it on)
    try:
        env = rllm_envs.make(ENV_ID, **ENV_KWARGS)
        out = []
        for i in range(indices):
            env.reset(options={"index": i})
            out.append(str(env.unwrapped.task["answer"]))
        env.close()
    finally:
        search_every_slot(False)
    return out


def wrong_answer(reference: str) -> str:
    """An answer of the same form that is not the reference."""
    return str((int(reference) + 1) % 8) if reference.isdigit() else reference + "0"


@contextlib.contextmanager
def _server(reply_s: float, work_s: float, log: Path) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, "-m", "rllm_adapters.serve", ENV_ID, "--port", str(port)]
    args += ["--env-kwargs", json.dumps(ENV_KWARGS), "--score-log", str(log)]
    args += ["--score-reply-s", str(reply_s), "--score-work-s", str(work_s)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {' '.join(args)}")
            time.sleep(0.5)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=60)


class _Setting:
    """Two sessions on one server, and the trials played on it."""

    def __init__(self, name: str, port: int) -> None:
        self.name, self.port = name, port
        self.reply: dict[bool, list[float]] = {True: [], False: []}
        self.neighbour: dict[bool, list[float]] = {True: [], False: []}

    async def open(self, indices: int) -> None:
        import websockets

        url = f"ws://127.0.0.1:{self.port}/ws"
        self.a = await websockets.connect(url, max_size=None)
        self.b = await websockets.connect(url, max_size=None)
        for i in range(indices):
            await self._call(self.a, {"type": "reset", "data": {"options": {"index": i}}})
        await self._call(self.b, {"type": "reset", "data": {"options": {"index": 0}}})

    @staticmethod
    async def _call(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        await ws.send(json.dumps(message))
        reply = json.loads(await ws.recv())
        if reply.get("type") == "error":
            raise RuntimeError(f"the server refused {message}: {reply}")
        return reply

    async def trial(self, index: int, answer: str, right: bool, window_s: float) -> None:
        await self._call(self.a, {"type": "reset", "data": {"options": {"index": index}}})
        step = json.dumps({"type": "step", "data": {"text": f"<answer>{answer}</answer>"}})
        state = json.dumps({"type": "state"})
        sent = time.perf_counter()
        await self.a.send(step)
        longest = 0.0
        while time.perf_counter() - sent < window_s:
            asked = time.perf_counter()
            await self.b.send(state)
            await self.b.recv()
            longest = max(longest, time.perf_counter() - asked)
        await self.a.recv()
        self.reply[right].append(time.perf_counter() - sent)
        self.neighbour[right].append(longest)

    async def close(self) -> None:
        await self.a.close()
        await self.b.close()

    def row(self, log: Path) -> dict[str, Any]:
        reply_s, work_s = SETTINGS[self.name]
        paid = [json.loads(line)["return"] for line in log.read_text().splitlines()]
        row: dict[str, Any] = {
            "setting": self.name,
            "score_reply_s": reply_s,
            "score_work_s": work_s,
            "pairs": len(self.reply[True]),
            "logged": {"paid": sum(r == 1.0 for r in paid), "episodes": len(paid)},
        }
        for probe, times in (("reply", self.reply), ("neighbour", self.neighbour)):
            value, z = auc(times[True], times[False])
            row[probe] = {
                "auc_right_slower": round(value, 3),
                "z": round(z, 2),
                # Means as well as medians: a second session's longest reply is bimodal (its
                # message came during the step's work or not), and a median then falls
                # between the modes wherever about half of a side's trials lie.
                **{
                    f"{name}_ms": {
                        "right": round(stat(times[True]) * 1e3, 3),
                        "wrong": round(stat(times[False]) * 1e3, 3),
                    }
                    for name, stat in (("median", statistics.median), ("mean", statistics.fmean))
                },
            }
        return row


async def _play(ports: dict[str, int], refs: list[str], window_s: float) -> list[_Setting]:
    settings = [_Setting(name, port) for name, port in ports.items()]
    for setting in settings:
        await setting.open(len(refs))
    for i, ref in enumerate(refs):
        pair = [(ref, True), (wrong_answer(ref), False)]
        for answer, right in pair if i % 2 else pair[::-1]:
            for setting in settings:
                await setting.trial(i, answer, right, window_s)
    for setting in settings:
        await setting.close()
    return settings


def run(pairs: int = 300, window_ms: float = 1.0) -> dict[str, Any]:
    """Play ``pairs`` right/wrong pairs against every setting; the results file's body."""
    refs = references(pairs)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        logs = {name: Path(tmp) / f"{name}.jsonl" for name in SETTINGS}
        ports = {
            name: stack.enter_context(_server(reply_s, work_s, logs[name]))
            for name, (reply_s, work_s) in SETTINGS.items()
        }
        started = time.perf_counter()
        settings = asyncio.run(_play(ports, refs, window_ms / 1e3))
        rows = [setting.row(logs[setting.name]) for setting in settings]
    for row in rows:
        if row["logged"] != {"paid": pairs, "episodes": 2 * pairs}:
            raise RuntimeError(f"the score log disagrees with the trials: {row}")
    return {
        "env": ENV_ID,
        "env_kwargs": {**ENV_KWARGS, "task_seed": "<private>"},
        "pairs": pairs,
        "window_ms": window_ms,
        "seconds": round(time.perf_counter() - started, 1),
        "settings": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.private_grading``."""
    from benchmarks.provenance import LoadSampler, provenance

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.private_grading", description=__doc__
    )
    parser.add_argument("--pairs", type=int, default=300, help="right/wrong pairs per setting")
    parser.add_argument("--window-ms", type=float, default=1.0, help="session B's probe window")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with LoadSampler(every_s=15) as load:
        result = run(args.pairs, args.window_ms)
    result.update(provenance("benchmarks.private_grading", argv, load=load))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for row in result["settings"]:
        print(
            f"{row['setting']:>10}: reply AUC {row['reply']['auc_right_slower']} "
            f"(z {row['reply']['z']}), neighbour AUC {row['neighbour']['auc_right_slower']} "
            f"(z {row['neighbour']['z']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
