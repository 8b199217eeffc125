"""The run store: RunWriter records a run into <logdir>/<name>/ (SQLite plus side files),
RunReader and list_runs read it back as engine.record.schema records; EventFileReader reads a
folder of TensorBoard event files the same way (open_run picks). No torch, no engine."""

from engine.record.event_files import EventFileReader
from engine.record.reader import RunReader, RunStoreError, RunStoreKeyError, list_runs, open_run
from engine.record.writer import RunWriteError, RunWriter, upgrade_run

__all__ = ["EventFileReader", "RunReader", "RunStoreError", "RunStoreKeyError", "RunWriteError",
           "RunWriter", "list_runs", "open_run", "upgrade_run"]
