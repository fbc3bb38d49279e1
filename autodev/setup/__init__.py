"""Getting started: `autodev doctor` and `autodev demo`."""
