"""`autodev eval` (SPEC §18): does a team finish real tasks, and at what cost?

- `tasks`: task files (autodev's fields or SWE-bench's), checked line by line
- `teams`: the `--team` files and the run settings (caps, base config) every run gets
- `workspace`: a task's clone at its base commit, setup, the patch a run left, the grade
- `runner`: one task × team whole (`run_job`): clone, the team through `autodev start`, grade
- `outcome`: what a run left (state, reason, audit verdicts, figures), read from its files
- `executors`: where runs execute (`LocalExecutor`, `RayExecutor`)
- `results`: results.jsonl, patches and predictions/<team>.jsonl under --out (resume reads them)
- `summary`: summary.json (pure): shares with Wilson intervals, costs, the paired tables
- `report`: the tables printed at the end, report.png (matplotlib, lazily)
- `driver`: the plan, the progress, the end
"""
