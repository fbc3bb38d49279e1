"""`python -m autodev.config > docs/CONFIG.md` regenerates the configuration reference."""

from autodev.config.docs import config_markdown

print(config_markdown(), end="")
