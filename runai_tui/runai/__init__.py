"""The `runai` plumbing: which executable (backend), what it accepts (capabilities: its own
--help; generations: its version line), the argv it is given (command),
running it (runner, interactive), talking to it (client) and reading what it prints (parse)."""
