"""The asynchronous rollout loop: many episodes at once, token-exact trajectories out.

::

    from rllm_adapters.backends import make_policy
    from rllm_adapters.rollout import RolloutConfig, rollout

    policy = make_policy("transformers", "tiny")        # or "vllm", "openai"
    config = RolloutConfig(num_envs=8, group_size=4)
    trajectories = rollout("rllm/FrozenLake-v1", policy, config, num_tasks=2)

How it runs:

* ``num_tasks`` tasks (or the given ``tasks``) times ``group_size`` samples are episodes; every
  sample of a task resets with the same seed (and task), so a group is G samples of one task.
* ``num_envs`` env workers each run one episode at a time. An episode asks the policy for its
  next action as soon as its previous env step returns: there are no lock-step batches; the
  backend batches whatever requests are in flight (vLLM continuously).
* Env calls run off the event loop -- in a thread pool, in worker processes or in Ray actors
  (``env_backend``) -- so a slow sandboxed step never stalls generation for other episodes.
* Finished trajectories stream out of :func:`rollout_stream` as they complete; a progress bar
  shows episodes, generated tokens/s and the mean reward.

Prompts are token-exact (:class:`rllm_agents.chat.ChatTokenizer`): each turn's prompt is the
previous prompt + completion + template glue + the new observation, and every trajectory is
checked against that invariant. What happened is recorded per trajectory
(``Trajectory.token_source``): ids from the engine, ids re-tokenised from a server's text, a
prompt the engine reports differently, or a chat API that templated the history itself
(``token_exact=False`` for all but the first).

A ``gymnasium`` vector env (``gym.make_vec``) is accepted as the env too; it is stepped in
lock-step (its API needs every sub-env's action at once), with its autoreset mode honoured.

The parts, one module each: :mod:`~rllm_adapters.rollout.config` (settings, episode plan, totals),
:mod:`~rllm_adapters.rollout.episode` (one episode's typed state and its turn, shared by both
paths), :mod:`~rllm_adapters.rollout.pool` (env workers kept across rollouts),
:mod:`~rllm_adapters.rollout.loop` (the asynchronous loop),
:mod:`~rllm_adapters.rollout.vector` (vector envs) and :mod:`~rllm_adapters.rollout.cli`
(the command line).

Command line (writes one JSONL or Parquet file per env)::

    python -m rllm_adapters.rollout --env all --backend vllm --model tiny --out rollouts/
"""

from rllm_adapters.rollout.cli import main, single_agent_env_ids
from rllm_adapters.rollout.config import EpisodeSpec, RolloutConfig, RolloutStats
from rllm_adapters.rollout.episode import EpisodeRunner, EpisodeState
from rllm_adapters.rollout.loop import EnvLike, rollout, rollout_stream
from rllm_adapters.rollout.pool import EnvPool

__all__ = [
    "EnvLike",
    "EnvPool",
    "EpisodeRunner",
    "EpisodeSpec",
    "EpisodeState",
    "RolloutConfig",
    "RolloutStats",
    "main",
    "rollout",
    "rollout_stream",
    "single_agent_env_ids",
]
