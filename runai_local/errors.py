"""The one base of every failure the local cluster expects and explains.

Each is printed by `runai-local` as one `Error: <message>` line with exit 1 (as cobra does), in
one place: local/cli.py main(). Anything else is a bug (`internal error`, traceback with --debug).
"""

from __future__ import annotations


class LocalError(Exception):
    """An explained failure of runai-local: bad flags, a bad spec, a missing workload, a bad
    config file, damaged state. The message is the whole explanation, on one line."""
