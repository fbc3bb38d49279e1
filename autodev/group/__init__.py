"""Best of N (SPEC §23, docs/best-of.md): a group of N ordinary runs of the team from one commit,
each in its own work tree (a clone), branch, run folder and daemon, and the pick among them.

- `record`: the group's durable record (`$AUTODEV_HOME/groups/<repo-folder>/<group>/group.jsonl`)
- `worktrees`: a run's clone, the ref that keeps its work, changed lines, removal
- `driver`: the detached process that starts up to `parallel` runs, notices their ends, holds
  the group's cost cap (`python -P -m autodev.group FOLDER`)
- `facts`: what each run shows (state, turns, spend, evidence, audit)
- `rank`: the pick's rules, pure; `pick`: the table, the winner and `--apply`
- `launch`: `start --best-of` and `--resume-group`: the checks, the record, the driver
"""
