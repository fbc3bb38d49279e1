"""The harness: one participant's turn, its tool loop and its tools."""
