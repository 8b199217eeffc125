"""The run store: RunWriter records a run into <logdir>/<name>/ (SQLite plus side files),
RunReader and list_runs read it back as engine.record.schema records. No torch, no engine."""

from engine.record.reader import RunReader, RunStoreError, RunStoreKeyError, list_runs
from engine.record.writer import RunWriteError, RunWriter, upgrade_run

__all__ = ["RunReader", "RunStoreError", "RunStoreKeyError", "RunWriteError", "RunWriter",
           "list_runs", "upgrade_run"]
