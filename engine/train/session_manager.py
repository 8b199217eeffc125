"""tf.train.SessionManager: makes a Session ready to train, by restoring the latest checkpoint
of a directory or else running the init op / init_fn, then the local init op, and checking
the ready op (TF's session_manager.py)."""

from __future__ import annotations

import logging
import time

import numpy as np

from engine import errors
from engine.graph import get_default_graph
from engine.train import checkpoint_state

__all__ = ["SessionManager"]

logger = logging.getLogger("engine.train")


def _name_of(obj) -> str:
    return "None" if obj is None else getattr(obj, "name", f"<no name for {type(obj)}>")


def _ready(op, sess, message: str) -> tuple[bool, str | None]:
    """TF's readiness check: `op` lists the uninitialized variables (empty: ready)."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            logger.warning("%s : error [%s]", message, e)
            raise
        return False, str(e)
    value = np.asarray(value) if value is not None else None
    if value is None or value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v)
                      for v in value.reshape(-1))
    return False, "Variables not initialized: " + names


class SessionManager:
    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs: float = 30, local_init_run_options=None,
                 local_init_feed_dict=None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(f"If you pass a ready_for_local_init_op you must also pass a "
                             f"local_init_op , ready_for_local_init_op "
                             f"[{ready_for_local_init_op}]")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph or get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    def _new_session(self, master: str, config):
        from engine.runtime.session import Session
        return Session(master, graph=self._graph, config=config)

    def _restore_checkpoint(self, master: str, saver=None, checkpoint_dir=None,
                            checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                            max_wait_secs: float = 7200, config=None):
        """A new Session and whether a checkpoint was restored into it."""
        sess = self._new_session(master, config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0.0
        state = checkpoint_state.get_checkpoint_state(checkpoint_dir)
        while state is None or not state.model_checkpoint_path:
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return sess, False
            logger.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = checkpoint_state.get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        return sess, True

    def prepare_session(self, master: str, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs: float = 7200, config=None, init_feed_dict=None,
                        init_fn=None):
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path, wait_for_checkpoint,
            max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, message = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  "
                               f"Init op: {_name_of(init_op)}, init fn: {init_fn}, error: "
                               f"{message}")
        ready, message = _ready(self._ready_op, sess, "Model not ready")
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                               f"{_name_of(init_op)}, init fn: {init_fn}, local_init_op: "
                               f"{self._local_init_op}, error: {message}")
        return sess

    def recover_session(self, master: str, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs: float = 7200, config=None):
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path, wait_for_checkpoint,
            max_wait_secs, config)
        ok, message = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            logger.info("Restoring model from %s did not make model ready for local init: %s",
                        source, message)
            return sess, False
        ready, message = _ready(self._ready_op, sess, "Model not ready")
        if not ready:
            logger.info("Restoring model from %s did not make model ready: %s", source, message)
            return sess, False
        logger.info("Restored model from %s", source)
        return sess, True

    def wait_for_session(self, master: str, config=None, max_wait_secs: float = float("inf")):
        """A session once the model is ready (another process initializes it); raises
        DeadlineExceededError after max_wait_secs."""
        deadline = time.monotonic() + (float("inf") if max_wait_secs is None else max_wait_secs)
        while True:
            sess = self._new_session(master, config)
            ok, local_message = self._try_run_local_init_op(sess)
            message = None
            if ok:
                ready, message = _ready(self._ready_op, sess, "Model not ready")
                if ready:
                    return sess
            sess.close()
            if deadline - time.monotonic() - self._recovery_wait_secs < 0:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait_secs} secs.")
            logger.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, "
                        "ready: %s", local_message, message)
            time.sleep(self._recovery_wait_secs)

    def _try_run_local_init_op(self, sess) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ready, message = _ready(self._ready_for_local_init_op, sess,
                                "Model not ready for local init")
        if not ready:
            return False, message
        logger.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                 options=self._local_init_run_options)
        logger.info("Done running local_init_op.")
        return True, None
