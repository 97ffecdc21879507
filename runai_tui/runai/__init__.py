"""The `runai` plumbing: which executable (backend), the argv it is given (command, generations),
running it (runner, interactive), talking to it (client) and reading what it prints (parse)."""
