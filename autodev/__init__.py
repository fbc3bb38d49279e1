"""autodev: a team of LLM participants taking turns on one shared, append-only thread."""

__version__ = "0.1.0"
