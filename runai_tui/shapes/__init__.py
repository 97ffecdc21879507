"""The shapes every layer shares: the job models, the error types, the settings, the `runai` CLI
generations and the JSON alias. Plain data and their readers, no client and no UI."""
