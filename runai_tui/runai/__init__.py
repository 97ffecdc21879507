"""The `runai` plumbing: which executable (backend), what the installed one is and accepts
(installed: its version line and its own --help, cached), the argv it is given (command),
running it (runner, interactive), talking to it (client) and reading what it prints (parse)."""
