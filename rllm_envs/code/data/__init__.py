"""The embedded problem set (``problems.jsonl``, written by ``scripts/build_code_problems.py``)."""
