"""Resumable batch jobs and the engines that run them (this process, or Ray actors across a cluster)."""

from .chunks import ClipJob, Process, process_rows
from .engines import ENGINES, Engine, make_engine
from .jobs import checkpoint_identity, media_identity, read_records, records_log, run_job, summary_path
from .local import LocalEngine

__all__ = [
    "ENGINES",
    "ClipJob",
    "Engine",
    "checkpoint_identity",
    "media_identity",
    "LocalEngine",
    "Process",
    "make_engine",
    "process_rows",
    "read_records",
    "records_log",
    "run_job",
    "summary_path",
]
