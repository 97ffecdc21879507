"""Job diagnosis from pod logs: what went wrong (NCCL, PyTorch, the trainer) and what to change.

Core (no Textual, no Rich). One concern per module:

- codes.py      the code table (CODES): code, severity, message, fix, example, pattern
- prefilter.py  the line prefilter: which lines of a block are candidates (Hyperscan or Python)
- nccl_net.py   the transport NCCL uses, as its log says it (gloo's: as the trainer says it)
- records.py    the trainer's records in a log
- pod.py        PodDiagnoser: one pod's log in, findings, counts and transport out
- joblogs.py    JobLogs (what a detector sees) and the Detector type
- detectors.py  the codes no single line shows (tcp-fallback, data-starved, stalled)
- waiting.py    pending: why a waiting job waits (knowledge/diagnose/pending.py reads the events)
- lost.py       pod-lost: a pod killed from outside (node lost, eviction), from describe
- retry.py      the retry decision: what the catalogue (each code's `retry`) says to do
- report.py     Diagnosis, combine (pods + detectors into one report), DETECTORS
- saved.py      saved logs (`--log FILE`), read in blocks
- render.py     the CLI's text report

The async pass over a job's pods (diagnose_job; diagnose_waiting: describe only) is
workflows/diagnose_job.py: this package reads facts and calls no client.

A new code:

1. a row in codes.CODES: code, severity (findings.ERROR / WARNING / INFO), retry (RUN_AGAIN,
   REMEDY or NEVER: what a retry can do), message, fix (a fix
   text another check gives too comes from knowledge/findings.py), example (a line of evidence);
2. a code found in a single line: its `pattern` and `needles` in that row, and that is all (the
   line prefilter takes its needles from the table);
   a code found from the whole job (several pods, the trainer's records, the job's state): a
   detector, `def NAME(job: JobLogs) -> Iterable[Finding]` in its own module here, which reads
   `job.pods` (PodDiagnoser: .records(), .record_lines(), .transport, .counts, .lines),
   `job.running`, `job.now`, `job.detail` (JobDetail; None for saved logs) and returns
   `make_finding(code, pod, line, evidence)`s; then one line in report.DETECTORS;
3. tests: a fixture log in tests/core/diagnose_logs/ with its EXPECTED codes in
   tests/core/test_diagnose.py (a code that needs a live job joins `stalled` in the set of
   codes without a fixture), and the code's row in docs/health.md's codes table (a test checks
   `| code | severity | message | example |`).
"""

from runai_tui.knowledge.diagnose.codes import CODES, EVIDENCE_MAX, Code, cut, make_finding
from runai_tui.knowledge.diagnose.joblogs import Detector, JobLogs
from runai_tui.knowledge.diagnose.nccl_net import (
    TRANSPORT_GLOO,
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
    "TRANSPORT_GLOO",
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
    "NetChoice",
    "PodDiagnoser",
    "PodHealth",
    "TrainerRecords",
    "combine",
    "cut",
    "diagnose_files",
    "diagnose_lines",
    "make_finding",
    "read_log_file",
    "read_log_lines",
    "render_text",
]
