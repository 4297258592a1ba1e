"""rllm_agents: turn environment observations into chat messages and model replies into actions.

Filled by the agents/trajectories work; kept importable so the package layout is stable.
"""
