"""What survives a crash, and where it lives: the durable JSONL journal, the thread, events,
state.json, the inbox, the run folder's paths, a lost state rebuilt from the logs, the runs index,
the daemon's lock and the accepted copy of the user's files. Imports nothing above `records/`
and `rules/`."""
