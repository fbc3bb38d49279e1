"""The run's rules, pure (no I/O): who speaks next, what a post may be, spending caps, pause and
stop reason codes, names with a meaning of their own."""
