"""A stored episode as a readable transcript."""

from __future__ import annotations

import json

from rllm_agents.store.schema import StoredEpisode


def transcript(episode: StoredEpisode, *, tokens: bool = False) -> str:
    """A readable transcript of a stored episode: header, then the conversation turn by turn."""
    t = episode.trajectory
    assert t is not None
    lines = [
        f"episode {episode.id}  {episode.hash[:12]}",
        f"env {episode.env_id}  kwargs {json.dumps(episode.env_kwargs)}  task {episode.task_id}  "
        f"seed {episode.seed}  group {episode.group}  sample {episode.sample}",
        f"run {episode.run}  model {episode.model}  finish {episode.finish}  "
        f"turns {episode.num_turns}  reward {episode.total_reward:g}  "
        f"correct {episode.is_correct}",
        "",
    ]
    if t.messages:
        turn = 0
        for message in t.messages:
            role = str(message.get("role", "?"))
            if role == "assistant" and turn < len(t.steps):
                step = t.steps[turn]
                turn += 1
                lines.append(f"--- assistant (turn {turn}, {len(step.completion_ids)} tokens)")
                lines.append(str(message.get("content", "")))
                lines.append(
                    f"    -> reward {step.reward:g}  terminated {step.terminated}  "
                    f"truncated {step.truncated}  correct {step.info.get('is_correct')}"
                )
            else:
                lines.append(f"--- {role}")
                lines.append(str(message.get("content", "")))
    else:
        lines += ["--- observation", t.initial_observation]
        for index, step in enumerate(t.steps, 1):
            lines += [f"--- model (turn {index})", step.response]
            if step.action != step.response:
                lines += ["--- action", step.action]
            lines += [
                f"--- env (reward {step.reward:g}, terminated {step.terminated}, "
                f"truncated {step.truncated})",
                step.observation,
            ]
    if tokens:
        lines += ["", f"token_ids {t.token_ids()}", f"loss_mask {t.loss_mask()}"]
    return "\n".join(lines)
