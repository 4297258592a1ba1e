r"""verifiers adapter: every rllm-envs id as a verifiers 0.4 taskset and env.

``pip install "rllm-envs[verifiers]"`` (verifiers >= 0.4, whose API is ``verifiers.v1``). A
verifiers plugin is a top-level module exporting one ``vf.Taskset`` (and optionally a
``vf.Env`` and a ``vf.Harness``) through ``__all__``; verifiers' own loader imports it by
taskset id. Ours is ``rllm_envs_verifiers`` (this module, re-exported), so the taskset id is
``rllm-envs-verifiers`` and the rllm-envs id is its ``env_id`` field::

    vf-eval rllm-envs-verifiers --env.taskset.env-id rllm/FrozenLake-v1 \
        --env.taskset.num-tasks 16 -n 16 -r 4 -m my-model \
        --client.base-url http://127.0.0.1:8000/v1 --client.api-key-var OPENAI_API_KEY \
        --no-push --no-rich

or in Python (verifiers' own eval runner; :func:`eval_config` builds its ``EvalConfig``)::

    import asyncio
    from verifiers.v1.cli.eval.runner import run_eval
    from rllm_adapters.verifiers import eval_config

    config = eval_config("rllm/Math-v1", model="my-model",
                         base_url="http://127.0.0.1:8000/v1", num_tasks=8)
    episodes = asyncio.run(run_eval(config))

* :class:`RllmTaskset` yields task ``start + k`` of the env reset with seed ``seed + k``; its
  prompt is the family agent's messages for the first observation (system prompt, worked
  example, the observation).
* :class:`RllmEnv` plays each episode: the model's reply is stepped through our env, the
  agent turns the env's feedback into the next user turn, until our env terminates or
  truncates (multi-turn ids: FrozenLake, CodeMultiTurn, ToolUse, Search; tool calls are
  text ``<tool_call>{...}</tool_call>`` as our agents write them, tool results come back as
  user turns).
* The task's ``@vf.reward`` ``env_reward`` is the episode return from our env (its family
  scorer); ``is_correct``, ``invalid_action``, ``turns`` and every reward component are
  ``@vf.metric``\ s. Paired with another verifiers env (``--env.id``), a task is scored by
  stepping a fresh episode with the trace's final reply.
* :class:`RllmChatHarness` (the taskset's default harness) is a tool-less chat loop run in
  process: each segment is one chat completion through verifiers' interception endpoint, so
  the trace, sampling, limits and training clients work as for any harness; it needs no
  ``uv`` or network at run time.

Multi-agent ids with one model seat (``rllm/TicTacToe-v0``: the registry row scripts
``player_1``) play that seat against the scripted opponents (:class:`rllm_adapters.trl.SeatEnv`)
on the ``agent`` role. Ids whose every seat is the model's (``rllm/SolverJudge-v1``,
``rllm/Debate-v1``) run through verifiers' multi-agent path: each seat of our PettingZoo env
(``solver_0`` ... and ``judge_0``; ``debater_0`` ...) is one interaction of the verifiers role
named by the seat's ``info["role"]`` (``--env.solver.*``, ``--env.judge.*``,
``--env.debater.*``), with its own conversation (the family agent's prompt for that seat, then
its observations as user turns). :meth:`RllmEnv.run` steps our parallel env one joint step at a
time: the seats ``info["acting"]`` names reply (a seat's conversation opens at its first turn
to act, as in :mod:`rllm_adapters.multiagent_play`), their actions go to ``env.step``
together. Each seat's trace is scored by the task's ``env_reward``: that seat's return from our
env; its task's ``seat`` names the seat. :meth:`RllmEnv.finalize` adds the env class's
cross-seat ``episode_metrics`` (SolverJudge: ``judge_accuracy``, ``judge_base_rate``) to every
seat's trace. verifiers declares roles as fields of the env's config
class, not per task, so :class:`RllmEnvConfig` declares the union (``agent``, ``solver``,
``judge``, ``debater``) and an episode uses the roles of its id; seats sharing a role are
several traces of that role (verifiers' ``Episode.by_agent``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
from collections.abc import Mapping
from typing import Any

from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import DependencyNotInstalled, require
from rllm_envs.utils import to_jsonable

_MIN_VERSION = (0, 4)


def _require_v1() -> Any:
    try:
        version = importlib.metadata.version("verifiers")
    except importlib.metadata.PackageNotFoundError:
        version = None
    if version is not None:
        parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
        if parts < _MIN_VERSION:
            raise DependencyNotInstalled(
                f"rllm_adapters.verifiers targets verifiers >= 0.4 (its `verifiers.v1` API); "
                f"verifiers {version} is installed, whose classic `vf.Environment` API this "
                f'adapter no longer supports. Run `pip install "rllm-envs[verifiers]"`.'
            )
    return require("verifiers.v1", "verifiers", feature="The verifiers adapter")


vf = _require_v1()
httpx = require("httpx", "verifiers", feature="The verifiers adapter")

#: The taskset id verifiers' loader resolves to this adapter (module ``rllm_envs_verifiers``).
TASKSET_ID = "rllm-envs-verifiers"

__all__ = [
    "TASKSET_ID",
    "RllmTasksetConfig",
    "RllmTaskData",
    "RllmTask",
    "RllmTaskset",
    "RllmEnvConfig",
    "RllmEnv",
    "RllmChatHarnessConfig",
    "RllmChatHarness",
    "eval_config",
]


def _wire(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    # Our tool results are text turns (text tool calls carry no tool_call_id).
    return [
        {"role": "user" if m["role"] == "tool" else str(m["role"]), "content": str(m["content"])}
        for m in messages
    ]


# ------------------------------------------------------------------------------- taskset


class RllmTasksetConfig(vf.TasksetConfig):  # type: ignore[name-defined]
    """Which env and tasks (``--env.taskset.*`` on the command line)."""

    env_id: str = "rllm/Math-v1"
    """A registered rllm-envs id: single-agent, or multi-agent (see the module docstring)."""
    env_kwargs: dict[str, Any] = {}
    """Constructor kwargs of the env (variants), e.g. ``{"difficulty": 3}``."""
    num_tasks: int = 100
    """Tasks: indices ``start .. start + num_tasks - 1`` (modulo the source size)."""
    start: int = 0
    """First task index (use disjoint ranges, or another ``task_seed``, for evaluation)."""
    seed: int = 0
    """Reset seed of task ``k`` is ``seed + k``."""


class RllmTaskData(vf.TaskData):  # type: ignore[name-defined]
    """One task: the env, its kwargs, the reset seed and task index, and the family's decoding."""

    env_id: str
    env_kwargs: dict[str, Any] = {}
    seed: int
    task_index: int
    max_turns: int = 1
    """Replies the env takes from the one seat of single-agent and one-seat ids."""
    max_tokens: int | None = None
    stop: list[str] = []
    tools: list[dict[str, Any]] = []
    seats: list[str] = []
    """Multi-agent ids with several model seats: every seat (empty for one-seat ids)."""
    seat: str | None = None
    """On the task a seat's interaction plays: that seat (``None`` on the taskset's task)."""


def _joint_seats(env_id: str) -> list[str]:
    """The seats of a multi-agent id whose every seat is the model's; ``[]`` for other ids."""
    import rllm_envs

    if env_id not in rllm_envs.list_multiagent_envs():
        return []
    opponents = dict(rllm_envs.env_entry(env_id).opponents)
    if opponents:
        return []  # one model seat against scripted players: SeatEnv
    env = rllm_envs.make_parallel(env_id)
    seats = list(env.possible_agents)
    env.close()
    return seats if len(seats) > 1 else []


def _new_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Any:
    """The env of an id: single-agent, or a multi-agent id's one model seat."""
    from rllm_adapters.trl import one_seat_env

    return one_seat_env(env_id, env_kwargs)  # raises for ids with several model seats


def _make(data: Any) -> tuple[Any, Any, str, dict[str, Any]]:
    """A fresh env and agent on the task; the first observation and info."""
    from rllm_agents.agent import make_agent

    env = _new_env(data.env_id, data.env_kwargs)
    observation, info = env.reset(seed=int(data.seed), options={"index": int(data.task_index)})
    agent = make_agent(data.env_id)
    return env, agent, observation, info


def _replay(data: Any, reply: str) -> dict[str, Any]:
    """Step a fresh episode of the task once with ``reply`` (scoring outside :class:`RllmEnv`)."""
    env, agent, observation, info = _make(data)
    try:
        agent.reset(observation, info)
        _, reward, terminated, truncated, info = env.step(agent.act(reply))
    finally:
        env.close()
    return {"return": float(reward), "turns": 1, "info": to_jsonable(info)}


class RllmTask(vf.Task[RllmTaskData, vf.State, vf.TaskConfig]):  # type: ignore[name-defined]
    """A task whose reward is our env's episode return and whose metrics are its info."""

    async def _outcome(self, trace: Any) -> dict[str, Any]:
        outcome = trace.info.get("rllm")
        if outcome is None and self.data.seats:
            raise AdapterConfigError(
                f"{self.data.env_id} is played by several seats at once; its tasks are scored "
                "by RllmEnv's episode (the taskset's own env), not by replaying one reply. "
                "Drop `--env.id` to run it with RllmEnv."
            )
        if outcome is None:
            outcome = await asyncio.to_thread(_replay, self.data, trace.last_reply or "")
            trace.info["rllm"] = outcome
        return dict(outcome)

    @vf.reward
    async def env_reward(self, trace: Any) -> float:
        """The env's return for the episode (its family scorer's reward)."""
        return float((await self._outcome(trace))["return"])

    @vf.metric
    async def env_info(self, trace: Any) -> dict[str, float]:
        """``is_correct``, ``invalid_action``, ``turns`` and ``component_<name>`` of the env."""
        outcome = await self._outcome(trace)
        info = outcome["info"]
        metrics = {
            "is_correct": float(bool(info.get("is_correct"))),
            "invalid_action": float(bool(info.get("invalid_action"))),
            "turns": float(outcome["turns"]),
        }
        for name, value in (info.get("reward_components") or {}).items():
            metrics[f"component_{name}"] = float(value)
        return metrics


class RllmTaskset(vf.Taskset[RllmTask, RllmTasksetConfig]):  # type: ignore[name-defined]
    """The tasks of one rllm-envs id (see :class:`RllmTasksetConfig`)."""

    def load(self) -> Any:
        """Yield the configured tasks with the family agent's prompt."""
        config = self.config
        if config.num_tasks < 1:
            raise AdapterConfigError(f"Expects `num_tasks` >= 1, actual: {config.num_tasks!r}.")
        if _joint_seats(config.env_id):
            yield from self._load_joint()
            return
        env = _new_env(config.env_id, config.env_kwargs)
        size = len(env.unwrapped.tasks) if hasattr(env.unwrapped, "tasks") else None
        max_turns = int(getattr(env.unwrapped, "max_turns", 1))
        env.close()
        from rllm_agents.agent import make_agent

        for k in range(config.num_tasks):
            index = config.start + k if not size else (config.start + k) % size
            seed = config.seed + k
            env = _new_env(config.env_id, config.env_kwargs)
            observation, info = env.reset(seed=seed, options={"index": index})
            env.close()
            agent = make_agent(config.env_id)
            hints = agent.sampling_hints()
            yield RllmTask(
                RllmTaskData(
                    id=str(info.get("task_id")),
                    name=f"{config.env_id}#{index}",
                    prompt=_wire(agent.reset(observation, info)),
                    env_id=config.env_id,
                    env_kwargs=dict(config.env_kwargs),
                    seed=seed,
                    task_index=index,
                    max_turns=max_turns,
                    max_tokens=hints.get("max_tokens"),
                    stop=list(hints.get("stop", ())),
                    tools=to_jsonable(list(info.get("tools") or [])),
                ),
                config.task,
            )

    def _load_joint(self) -> Any:
        """The tasks of an id with several model seats; the prompt is the first seat's."""
        import rllm_envs
        from rllm_agents.agent import make_agent

        config = self.config
        env = rllm_envs.make_parallel(config.env_id, **config.env_kwargs)
        try:
            size = len(env.tasks)
            for k in range(config.num_tasks):
                index = (config.start + k) % size if size else config.start + k
                seed = config.seed + k
                observations, infos = env.reset(seed=seed, options={"index": index})
                first = next(a for a in env.agents if infos[a]["acting"])
                agent = make_agent(config.env_id)
                hints = agent.sampling_hints()
                yield RllmTask(
                    RllmTaskData(
                        id=str(infos[first]["task_id"]),
                        name=f"{config.env_id}#{index}",
                        prompt=_wire(agent.reset(str(observations[first]), infos[first])),
                        env_id=config.env_id,
                        env_kwargs=dict(config.env_kwargs),
                        seed=seed,
                        task_index=index,
                        max_tokens=hints.get("max_tokens"),
                        stop=list(hints.get("stop", ())),
                        seats=list(env.possible_agents),  # as the kwargs make them
                    ),
                    config.task,
                )
        finally:
            env.close()


# ----------------------------------------------------------------------------------- env


class RllmEnvConfig(vf.EnvConfig):  # type: ignore[name-defined]
    """The env's roles, one ``AgentConfig`` each (``--env.<role>.*``).

    ``agent`` plays single-agent and one-seat ids; ``solver`` and ``judge`` play
    ``rllm/SolverJudge-v1``'s seats, ``debater`` ``rllm/Debate-v1``'s. Their runtime defaults
    to a local subprocess workspace: the chat harness runs in process and needs no container
    (verifiers' own default is a remote Prime sandbox).
    """

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())  # type: ignore[name-defined]
    """The one seat of single-agent ids and of multi-agent ids with one model seat."""
    solver: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())  # type: ignore[name-defined]
    """Every ``solver_<i>`` seat of ``rllm/SolverJudge-v1`` (one trace each)."""
    judge: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())  # type: ignore[name-defined]
    """The ``judge_0`` seat of ``rllm/SolverJudge-v1``."""
    debater: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())  # type: ignore[name-defined]
    """Every ``debater_<i>`` seat of ``rllm/Debate-v1`` (one trace each)."""


class RllmEnv(vf.Env[RllmEnvConfig]):  # type: ignore[name-defined]
    """One episode of our env per rollout: the model's replies are its actions (every seat's)."""

    async def run(self, task: Any, agents: Any) -> None:
        """Play the task's episode: reply, step, feedback as the next user turn, until done."""
        if task.data.seats:
            await self._run_joint(task, agents)
            return
        data = task.data
        env, agent, observation, info = await asyncio.to_thread(_make, data)
        agent.reset(observation, info)
        total, turns, last_info = 0.0, 0, dict(info)
        try:
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    action = agent.act(segment.last_reply)
                    observation, reward, terminated, truncated, step_info = await asyncio.to_thread(
                        env.step, action
                    )
                    total, turns, last_info = total + float(reward), turns + 1, step_info
                    if terminated or truncated:
                        break
                    new = agent.observe(
                        observation, float(reward), terminated, truncated, step_info
                    )
                    segment = await interaction.turn(_wire(new))
                # Read by the task's reward and metrics when the interaction closes.
                interaction.trace.info["rllm"] = {
                    "return": total,
                    "turns": turns,
                    "info": to_jsonable(last_info),
                }
        finally:
            await asyncio.to_thread(env.close)

    async def _run_joint(self, task: Any, agents: Any) -> None:
        """One episode of an id with several model seats: one interaction per seat.

        Each joint step, the acting seats without a conversation open one (on a task whose
        prompt is the family agent's for that seat), every acting seat replies, and the
        actions step our parallel env together. When every seat is done, each trace gets its
        seat's return, then the interactions close and verifiers scores them.
        """
        import rllm_envs
        from rllm_agents.agent import make_agent

        data = task.data
        env = await asyncio.to_thread(rllm_envs.make_parallel, data.env_id, **data.env_kwargs)
        try:
            observations, infos = await asyncio.to_thread(
                env.reset, seed=int(data.seed), options={"index": int(data.task_index)}
            )
            seats = list(env.possible_agents)
            returns = dict.fromkeys(seats, 0.0)
            pending = dict.fromkeys(seats, 0.0)  # reward since the seat's last turn
            turns = dict.fromkeys(seats, 0)
            last = {seat: dict(infos[seat]) for seat in seats}
            chats: dict[str, Any] = {}
            interactions: dict[str, Any] = {}
            over: set[str] = set()  # seats whose exchange verifiers ended (a limit)
            async with contextlib.AsyncExitStack() as stack:

                async def reply(seat: str) -> str:
                    chat = chats[seat]
                    if seat in over:
                        return str(chat.act(""))
                    if turns[seat] == 0:
                        segment = await interactions[seat].turn()
                    else:
                        new = chat.observe(
                            str(observations[seat]), pending[seat], False, False, infos[seat]
                        )
                        segment = await interactions[seat].turn(_wire(new))
                    pending[seat] = 0.0
                    if segment.terminated:
                        over.add(seat)
                        return str(chat.act(""))
                    return str(chat.act(segment.last_reply or ""))

                while env.agents:
                    acting = [a for a in env.agents if infos[a]["acting"]]
                    for seat in acting:
                        if seat in chats:
                            continue
                        chat = chats[seat] = make_agent(data.env_id)
                        messages = chat.reset(str(observations[seat]), infos[seat])
                        # Validated, not model_copy'd: the prompt becomes typed messages.
                        seat_data = type(data).model_validate(
                            {
                                **data.model_dump(),
                                "prompt": _wire(messages),
                                "seat": seat,
                                "name": f"{data.name}/{seat}",
                            }
                        )
                        seat_task = type(task)(seat_data, task.config)
                        role = _role_agent(agents, str(infos[seat]["role"]), data.env_id)
                        interactions[seat] = await stack.enter_async_context(
                            role.interaction(seat_task)
                        )
                    texts = await asyncio.gather(*(reply(seat) for seat in acting))
                    for seat in acting:
                        turns[seat] += 1
                    observations, rewards, _, _, infos = await asyncio.to_thread(
                        env.step, dict(zip(acting, texts, strict=True))
                    )
                    for seat, reward in rewards.items():
                        returns[seat] += float(reward)
                        pending[seat] += float(reward)
                        last[seat] = dict(infos[seat])
                # Read by each trace's task reward and metrics when its interaction closes.
                for seat, interaction in interactions.items():
                    interaction.trace.info["rllm"] = {
                        "return": returns[seat],
                        "turns": turns[seat],
                        "info": to_jsonable(last[seat]),
                        "seat": seat,
                    }
        finally:
            await asyncio.to_thread(env.close)

    async def finalize(self, task: Any, episode: Any) -> None:
        """Cross-seat metrics of the env class's ``episode_metrics`` on every seat's trace.

        SolverJudge: the judge's accuracy next to its base rate (the share of correct
        solutions), as our leaderboard reports them.
        """
        if not task.data.seats:
            return
        import rllm_envs

        cls = rllm_envs.resolve(rllm_envs.env_entry(task.data.env_id).entry_point)
        episode_metrics = getattr(cls, "episode_metrics", None)
        if not callable(episode_metrics):
            return
        outcomes = [trace.info["rllm"] for trace in episode.traces]
        correct = {o["seat"]: bool(o["info"].get("is_correct")) for o in outcomes}
        metrics = dict(episode_metrics(correct))
        for trace in episode.traces:
            trace.record_metrics(metrics)


def _role_agent(agents: Any, role: str, env_id: str) -> Any:
    """The verifiers agent of a seat's role (a field of :class:`RllmEnvConfig`)."""
    try:
        return getattr(agents, role)
    except AttributeError as e:
        raise AdapterConfigError(
            f"{env_id} has a seat of role {role!r}, which RllmEnvConfig does not declare; "
            "declare it as an `AgentConfig` field of RllmEnvConfig."
        ) from e


# ------------------------------------------------------------------------------- harness


class RllmChatHarnessConfig(vf.HarnessConfig):  # type: ignore[name-defined]
    """The chat harness's settings."""

    request_timeout: float = 600.0
    """Seconds one chat completion may take."""


class RllmChatHarness(vf.Harness[RllmChatHarnessConfig]):  # type: ignore[name-defined]
    """A tool-less chat loop in process: one chat completion per segment via interception."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> Any:
        """Send the conversation to ``endpoint`` once; the interception records the turn."""
        from verifiers.v1.dialects.chat import message_to_wire

        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        body: dict[str, Any] = {"model": ctx.model, "messages": messages}
        if getattr(data, "max_tokens", None):
            body["max_tokens"] = data.max_tokens
        if getattr(data, "stop", None):
            body["stop"] = list(data.stop)
        try:
            async with httpx.AsyncClient(timeout=self.config.request_timeout) as client:
                response = await client.post(
                    endpoint.rstrip("/") + "/chat/completions",
                    json=body,
                    headers={"Authorization": f"Bearer {secret}"},
                )
        except httpx.TransportError as e:
            from verifiers.v1.errors import MODEL_TRANSPORT_ERROR_EXIT_CODE

            return vf.ProgramResult(
                exit_code=MODEL_TRANSPORT_ERROR_EXIT_CODE, stdout="", stderr=repr(e)
            )
        if response.status_code >= 400:
            from verifiers.v1.harnesses.utils.compaction import CONTEXT_OVERFLOW_MARKERS

            text = response.text.casefold()
            if response.status_code in (400, 413) and any(
                marker in text for marker in CONTEXT_OVERFLOW_MARKERS
            ):
                # As verifiers' own chat program: a full context ends the exchange (no new
                # turn), it is not a crash. The episode ends with the replies so far.
                return vf.ProgramResult(exit_code=0, stdout="", stderr="")
            return vf.ProgramResult(exit_code=1, stdout="", stderr=response.text[-2000:])
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


# ---------------------------------------------------------------------------- eval config


def eval_config(
    env_id: str,
    *,
    model: str,
    base_url: str,
    num_tasks: int = 16,
    num_rollouts: int = 1,
    env_kwargs: Mapping[str, Any] | None = None,
    start: int = 0,
    seed: int = 0,
    api_key_var: str = "OPENAI_API_KEY",
    sampling: Mapping[str, Any] | None = None,
    output_dir: str = "outputs",
    max_concurrent: int | None = 32,
) -> Any:
    """The verifiers ``EvalConfig`` for an id served by an OpenAI-compatible endpoint.

    Args:
        env_id: A registered single-agent id, or a multi-agent id (its seats' roles).
        model: The served model name.
        base_url: The endpoint, e.g. ``"http://127.0.0.1:8000/v1"``.
        num_tasks: Tasks (all evaluated).
        num_rollouts: Episodes per task (the group size).
        env_kwargs: Env constructor kwargs.
        start: First task index.
        seed: Base reset seed.
        api_key_var: Environment variable holding the key (unset: ``"EMPTY"``).
        sampling: verifiers ``SamplingConfig`` fields (e.g. ``{"temperature": 0.0}``).
        output_dir: Where verifiers writes the run (``traces.jsonl``).
        max_concurrent: Episodes in flight.

    Returns:
        A ``verifiers.v1.configs.cli.eval.EvalConfig`` for ``run_eval``.
    """
    from verifiers.v1.configs.cli.eval import EvalConfig

    return EvalConfig.model_validate(
        {
            "env": {
                "taskset": {
                    "id": TASKSET_ID,
                    "env_id": env_id,
                    "env_kwargs": json.loads(json.dumps(dict(env_kwargs or {}))),
                    "num_tasks": num_tasks,
                    "start": start,
                    "seed": seed,
                }
            },
            "model": model,
            "client": {"type": "eval", "base_url": base_url, "api_key_var": api_key_var},
            "sampling": dict(sampling or {}),
            "num_rollouts": num_rollouts,
            "max_concurrent": max_concurrent,
            "rich": None,
            "push": False,
            "output_dir": output_dir,
        }
    )
