"""Getting started: `autodev doctor`, the checks of what `start` needs (status shows them too)."""
