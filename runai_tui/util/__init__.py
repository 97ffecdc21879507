"""Small helpers with no policy: files written atomically, terminal-safe text, durations and
Kubernetes quantities, reads run together, where runai-tui keeps its files, the docs' generated
blocks. They import nothing else of runai_tui."""
