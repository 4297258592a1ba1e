"""The embedded problem set (``problems.jsonl``) and its generator (``_build.py``)."""
