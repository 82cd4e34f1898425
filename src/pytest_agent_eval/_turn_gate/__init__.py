"""Turn-taking gates (issue 34): a YAML file's ``turn_taking:`` block read into a spec, collected
as one pytest item per stimulus category and run against the project's agent through its
framework's runner, the budgets checked. The stimuli, pack and metrics it plays and scores are
`pytest_agent_eval._turn_taking`'s. Private: docs/turn-taking.md describes the file."""

__all__: list[str] = []
