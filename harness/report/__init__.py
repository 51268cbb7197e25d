"""Run outputs: results.json (the source of truth) and the pytest-html columns."""
