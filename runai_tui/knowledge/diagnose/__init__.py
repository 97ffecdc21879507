"""Job diagnosis from pod logs: what went wrong (NCCL, PyTorch, the trainer) and what to change.

Core (no Textual, no Rich). One concern per module:

- codes.py      the code table (CODES): code, severity, message, fix, example, pattern
- screen.py     the line screen: which lines of a block are candidates (Hyperscan or Python)
- nccl_net.py   the transport NCCL uses, as its log says it
- records.py    the trainer's records in a log
- pod.py        PodDiagnoser: one pod's log in, findings, counts and transport out
- joblogs.py    JobLogs (what a detector sees) and the Detector type
- detectors.py  the codes no single line shows (tcp-fallback, data-starved, stalled)
- report.py     Diagnosis, combine (pods + detectors into one report), DETECTORS
- saved.py      saved logs (`--log FILE`), read in blocks
- job.py        the async pass over a job's pods (diagnose_job)
- render.py     the CLI's text report

A new code: a row in codes.CODES; a line pattern is all a line code needs, a derived code adds
a detector function (JobLogs -> findings) listed in report.DETECTORS.
"""

from runai_tui.knowledge.diagnose.codes import CODES, EVIDENCE_MAX, Code, cut, make_finding
from runai_tui.knowledge.diagnose.job import LogSource, diagnose_job
from runai_tui.knowledge.diagnose.joblogs import Detector, JobLogs
from runai_tui.knowledge.diagnose.nccl_net import (
    TRANSPORT_IB,
    TRANSPORT_SOCKET,
    TRANSPORT_UNKNOWN,
    NetChoice,
)
from runai_tui.knowledge.diagnose.pod import (
    DEFAULT_LIMITS,
    FINDINGS_PER_CODE,
    MAX_LINE_READ,
    Limits,
    PodDiagnoser,
    PodHealth,
)
from runai_tui.knowledge.diagnose.records import RECORDS_KEPT, TrainerRecords
from runai_tui.knowledge.diagnose.render import render_text
from runai_tui.knowledge.diagnose.report import DETECTORS, Diagnosis, combine, diagnose_lines
from runai_tui.knowledge.diagnose.saved import (
    BLOCK_BYTES,
    diagnose_files,
    read_log_file,
    read_log_lines,
)
from runai_tui.knowledge.findings import ERROR, INFO, SEVERITY_ORDER, WARNING, Finding

__all__ = [
    "BLOCK_BYTES",
    "CODES",
    "DEFAULT_LIMITS",
    "DETECTORS",
    "ERROR",
    "EVIDENCE_MAX",
    "FINDINGS_PER_CODE",
    "INFO",
    "MAX_LINE_READ",
    "RECORDS_KEPT",
    "SEVERITY_ORDER",
    "TRANSPORT_IB",
    "TRANSPORT_SOCKET",
    "TRANSPORT_UNKNOWN",
    "WARNING",
    "Code",
    "Detector",
    "Diagnosis",
    "Finding",
    "JobLogs",
    "Limits",
    "LogSource",
    "NetChoice",
    "PodDiagnoser",
    "PodHealth",
    "TrainerRecords",
    "combine",
    "cut",
    "diagnose_files",
    "diagnose_job",
    "diagnose_lines",
    "make_finding",
    "read_log_file",
    "read_log_lines",
    "render_text",
]
