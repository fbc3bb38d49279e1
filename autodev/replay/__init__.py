"""Replay (SPEC §20): a recorded run re-executed by the real daemon, compared turn by turn, and the
bundle it may come from. Above the daemon and the user's actions, which it drives."""
