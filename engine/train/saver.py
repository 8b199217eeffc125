"""tf.train.Saver: checkpoints as a safetensors file plus a small JSON index (no pickle), the
`checkpoint` state file, max_to_keep / keep_checkpoint_every_n_hours, and restore ops in the
graph as TF names them (`save/RestoreV2_<i>` -> `save/Assign_<i>` -> `save/restore_all`), so
a restore is an ordinary Session.run that reaches variables on any device."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes, errors
from engine.graph import Graph, Operation, Tensor, get_default_graph
from engine.shapes import TensorShape
from engine.train import checkpoint_file, checkpoint_state

__all__ = [
    "Saver",
    "SaverDef",
]

logger = logging.getLogger("engine.train")
SAVERS = "savers"            # tf.GraphKeys.SAVERS
_VARIABLE_OPS = ("VariableV2", "Variable")


@dataclass
class SaverDef:
    """TF's SaverDef, plus what a Saver rebuilt from a meta graph needs: for each checkpoint
    key, the tensor saved and the placeholder its restored value is fed into."""
    filename_tensor_name: str = ""
    save_tensor_name: str = ""
    restore_op_name: str = ""
    max_to_keep: int = 5
    sharded: bool = False
    keep_checkpoint_every_n_hours: float = 10000.0
    version: int = 2
    save_tensors: dict[str, str] = field(default_factory=dict)
    restore_feeds: dict[str, str] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)

    V1 = 1
    V2 = 2


@dataclass
class _Saveable:
    name: str              # checkpoint key
    ref: Tensor            # the variable's ref output (what the Assign writes)
    value: Tensor          # what a save fetches

    @property
    def dtype(self) -> dtypes.DType:
        return self.ref.dtype.base_dtype


def _saveable_of(name: str, var) -> _Saveable:
    if hasattr(var, "_ref") and hasattr(var, "value"):
        return _Saveable(name, var._ref(), var.value())
    if isinstance(var, Tensor) and var.op.type in _VARIABLE_OPS:
        return _Saveable(name, var, var)
    raise TypeError(f"Variable to save is not a Variable: {var}")


def _saveables(var_list) -> list[_Saveable]:
    """var_list as TF takes it: a {name: variable} map, or a list keyed by op name."""
    if isinstance(var_list, dict):
        found, seen = [], {}
        for name, var in var_list.items():
            if not isinstance(name, str):
                raise TypeError(f"names_to_saveables must be a dict mapping string names to "
                                f"Tensors/Variables. Not a string name: {name!r}")
            if not (hasattr(var, "_ref") or isinstance(var, Tensor)):
                raise TypeError(f"names_to_saveables must be a dict mapping string names to "
                                f"Tensors/Variables. Not a variable: {var}")
            saveable = _saveable_of(name, var)
            if id(saveable.ref) in seen:
                raise ValueError(f"The same saveable will be restored with two names: {name}")
            seen[id(saveable.ref)] = name
            found.append(saveable)
    else:
        found, names = [], set()
        for var in var_list:
            saveable = _saveable_of(getattr(getattr(var, "op", None), "name", None), var)
            if saveable.name in names:
                raise ValueError(f"At least two variables have the same name: {saveable.name}")
            names.add(saveable.name)
            found.append(saveable)
    for s in found:
        if not checkpoint_file.can_store(s.dtype):
            raise TypeError(f"Variable '{s.name}' has dtype {s.dtype.name}, which checkpoints "
                            "cannot hold (strings and resources are not saveable).")
    return sorted(found, key=lambda s: s.name)


def _all_saveable_objects(graph: Graph) -> list:
    return graph.get_collection("variables") + graph.get_collection("saveable_objects")


class Saver:
    """Saves and restores variables. Checkpoint `<prefix>` is the files `<prefix>.index`
    (JSON) and `<prefix>.safetensors`, plus `<prefix>.meta` (the graph, JSON) when asked."""

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: int | None = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: str | None = None, restore_sequentially: bool = False,
                 saver_def: SaverDef | None = None, builder=None, defer_build: bool = False,
                 allow_empty: bool = False, write_version: int = SaverDef.V2,
                 pad_step_number: bool = False, save_relative_paths: bool = False,
                 filename: str | None = None):
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either "
                             "set defer_build=False or var_list=None.")
        if reshape:
            raise errors.UnimplementedError(None, None, "Saver(reshape=True): restoring into "
                                            "variables of another shape is not supported.")
        if builder is not None:
            raise errors.UnimplementedError(None, None, "Saver(builder=...): custom saver "
                                            "builders are not supported.")
        if write_version != SaverDef.V2:
            raise errors.UnimplementedError(None, None, "Saver(write_version=V1): only the V2 "
                                            "layout (index + data file) is written.")
        self._var_list = var_list
        self._max_to_keep = max_to_keep
        self._keep_every_hours = keep_checkpoint_every_n_hours
        self._sharded = sharded
        self._name = name
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self.saver_def = saver_def
        self._graph: Graph | None = None
        self._saveables: list[_Saveable] = []
        self._restore_feeds: dict[str, Tensor] = {}
        self._assigns: dict[str, Operation] = {}
        self._restore_op = None
        self._is_built = False
        self._is_empty = None
        self._last_checkpoints: list[tuple[str, float]] = []
        self._to_delete: list[tuple[str, float]] = []
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        del restore_sequentially    # one restore op per variable either way
        if saver_def is not None:
            self._adopt(saver_def, name)
        elif not defer_build:
            self.build()

    # -- building -------------------------------------------------------------------------

    def build(self) -> None:
        if self._is_built:
            return
        self._is_built = True
        graph = get_default_graph()
        var_list = self._var_list if self._var_list is not None else \
            _all_saveable_objects(graph)
        if not var_list:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        self._is_empty = False
        self._saveables = _saveables(var_list)
        graphs = {id(s.ref.graph): s.ref.graph for s in self._saveables}
        if len(graphs) > 1:
            raise ValueError("Saver: the variables to save come from more than one graph.")
        self._graph = next(iter(graphs.values()))
        self._build_restore_ops()
        self.saver_def = SaverDef(
            restore_op_name=self._restore_op.name, max_to_keep=self._max_to_keep or 0,
            sharded=self._sharded, keep_checkpoint_every_n_hours=self._keep_every_hours,
            save_tensors={s.name: s.value.name for s in self._saveables},
            restore_feeds={k: t.name for k, t in self._restore_feeds.items()},
            dtypes={s.name: s.dtype.name for s in self._saveables})
        self._next_checkpoint_time = time.time() + self._keep_every_hours * 3600

    def _build_restore_ops(self) -> None:
        from engine.ops import array_ops, control_flow_ops, state_ops
        g = self._graph
        with g.as_default(), g.name_scope(self._name or "save"), g.device(None), \
                g.control_dependencies(None), g.colocate_with(None):
            for s in self._saveables:
                # Fed values arrive as numpy; bfloat16 (which numpy lacks) travels as float32,
                # which holds every bfloat16 value exactly, and is cast back in the graph.
                fed_dtype = dtypes.float32 if s.dtype is dtypes.bfloat16 else s.dtype
                feed = array_ops.placeholder(fed_dtype, s.ref.shape, name="RestoreV2")
                value = feed if fed_dtype is s.dtype else array_ops.cast(feed, s.dtype)
                self._restore_feeds[s.name] = feed
                self._assigns[s.name] = state_ops.assign(
                    s.ref, value, name="Assign",
                    validate_shape=s.ref.shape.is_fully_defined()).op
            self._restore_op = control_flow_ops.group(*self._assigns.values(),
                                                      name="restore_all")

    def _adopt(self, saver_def: SaverDef, name: str | None) -> None:
        """A Saver over ops that already exist (from_proto, import_meta_graph)."""
        if not saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {saver_def}")
        graph = get_default_graph()
        prefix = f"{name}/" if name else ""
        self._graph = graph
        self._is_built = True
        self._is_empty = not saver_def.save_tensors
        self._restore_op = graph.get_operation_by_name(prefix + saver_def.restore_op_name)
        for key, tensor_name in sorted(saver_def.save_tensors.items()):
            value = graph.get_tensor_by_name(prefix + tensor_name)
            feed = graph.get_tensor_by_name(prefix + saver_def.restore_feeds[key])
            assign = next(op for op in feed.consumers() if op.type in ("Assign", "Cast"))
            while assign.type != "Assign":
                assign = assign.outputs[0].consumers()[0]
            self._saveables.append(_Saveable(key, assign.inputs[0], value))
            self._restore_feeds[key] = feed
            self._assigns[key] = assign
        self._max_to_keep = saver_def.max_to_keep
        self._keep_every_hours = saver_def.keep_checkpoint_every_n_hours
        self._next_checkpoint_time = time.time() + self._keep_every_hours * 3600

    # -- bookkeeping (TF's rules) ---------------------------------------------------------

    @property
    def last_checkpoints(self) -> list[str]:
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        if not isinstance(last_checkpoints, list):
            raise TypeError("last_checkpoints must be a list of checkpoint prefixes")
        self._last_checkpoints = [(p, float("inf")) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Takes over the checkpoints a previous run kept (with their files' times), so that
        max_to_keep keeps counting across restarts."""
        found = []
        for path in checkpoint_paths:
            mtimes = checkpoint_state.get_checkpoint_mtimes([path])
            if mtimes:
                found.append((path, mtimes[0]))
        self._last_checkpoints = found

    def _record_last_checkpoint(self, path: str) -> None:
        if not self._max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._to_delete.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix: str) -> None:
        if not self._to_delete:
            return
        path, saved_at = self._to_delete.pop(0)
        # keep_checkpoint_every_n_hours: one checkpoint per period survives max_to_keep.
        if saved_at > self._next_checkpoint_time:
            self._next_checkpoint_time += self._keep_every_hours * 3600
            return
        try:
            checkpoint_state.remove_checkpoint(path, meta_graph_suffix=meta_graph_suffix)
        except OSError as e:
            logger.warning("Ignoring: %s", e)

    def as_saver_def(self) -> SaverDef:
        return self.saver_def

    def to_proto(self, export_scope=None) -> SaverDef:
        return self.saver_def

    @staticmethod
    def from_proto(saver_def: SaverDef, import_scope=None) -> Saver:
        return Saver(saver_def=saver_def, name=import_scope)

    # -- save -----------------------------------------------------------------------------

    def save(self, sess, save_path: str, global_step=None, latest_filename: str | None = None,
             meta_graph_suffix: str = "meta", write_meta_graph: bool = True,
             write_state: bool = True, strip_default_attrs: bool = False,
             save_debug_info: bool = False) -> str | None:
        """Writes `<save_path>[-<global_step>]` and returns that prefix."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            step = _global_step_value(sess, global_step)
            checkpoint_path = f"{save_path}-{step:08d}" if self._pad_step_number else \
                f"{save_path}-{step}"
        else:
            checkpoint_path = save_path
            if os.path.basename(save_path) == latest_filename:
                raise ValueError(f"'latest_filename' collides with 'save_path': "
                                 f"'{latest_filename}' and '{save_path}'")
        if not hasattr(sess, "run"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        parent = os.path.dirname(save_path)
        if not self._is_empty:
            if parent and not os.path.isdir(parent):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
            values = sess.run([s.value for s in self._saveables])
            checkpoint_file.write_checkpoint(checkpoint_path, {
                s.name: (v, s.dtype) for s, v in zip(self._saveables, values)})
            if write_state:
                self._record_last_checkpoint(checkpoint_path)
                checkpoint_state.update_checkpoint_state(
                    parent, checkpoint_path, self.last_checkpoints, latest_filename,
                    self._save_relative_paths)
                self._maybe_delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph:
            self.export_meta_graph(f"{checkpoint_path}.{meta_graph_suffix}",
                                   graph=getattr(sess, "graph", None))
        return None if self._is_empty else checkpoint_path

    def export_meta_graph(self, filename: str | None = None, collection_list=None,
                          as_text: bool = False, export_scope=None, clear_devices: bool = False,
                          graph: Graph | None = None, **unused) -> dict:
        from engine.train.meta_graph import export_meta_graph
        return export_meta_graph(filename, saver_def=self.saver_def,
                                 graph=graph or self._graph or get_default_graph(),
                                 clear_devices=clear_devices)

    # -- restore --------------------------------------------------------------------------

    def restore(self, sess, save_path: str) -> None:
        """Feeds every value of checkpoint `save_path` into the graph's restore ops."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_state.checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        logger.info("Restoring parameters from %s", save_path)
        reader = checkpoint_file.CheckpointReader(save_path)
        self._check_against(reader)
        values = reader.read_all()
        feeds = {self._restore_feeds[s.name]: values[s.name] for s in self._saveables}
        sess.run(self._restore_op, feed_dict=feeds)

    def _check_against(self, reader: checkpoint_file.CheckpointReader) -> None:
        """The graph-vs-checkpoint mismatches TF reports from RestoreV2 / Assign, raised
        before anything is assigned and naming the variable."""
        missing = [s for s in self._saveables if not reader.has_tensor(s.name)]
        if missing:
            lines = "\n".join(f"Key {s.name} not found in checkpoint" for s in missing)
            raise errors.NotFoundError(None, None, _restore_failed(
                "a Variable name or other graph key that is missing",
                f"{lines}\n\t [[{{{{node {self._restore_feeds[missing[0].name].op.name}}}}} "
                f"(checkpoint {reader.prefix})]]"))
        shapes, types = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
        for s in self._saveables:
            if types[s.name] is not s.dtype:
                raise errors.InvalidArgumentError(None, None, _restore_failed(
                    "a mismatch between the current graph and the graph",
                    f"tensor_name = {s.name}; expected dtype {s.dtype.tf_string} does not "
                    f"equal original dtype {types[s.name].tf_string}\n\t [[{{{{node "
                    f"{self._restore_feeds[s.name].op.name}}}}} (variable '{s.name}', "
                    f"checkpoint {reader.prefix})]]"))
            if not s.ref.shape.is_compatible_with(shapes[s.name]):
                graph_shape = s.ref.shape.bracket_str()
                stored_shape = TensorShape(shapes[s.name]).bracket_str()
                raise errors.InvalidArgumentError(None, None, _restore_failed(
                    "a mismatch between the current graph and the graph",
                    f"Assign requires shapes of both tensors to match. lhs shape= {graph_shape} "
                    f"rhs shape= {stored_shape}\n\t [[{{{{node {self._assigns[s.name].name}}}}} "
                    f"(variable '{s.name}' has shape {graph_shape} in the graph and "
                    f"{stored_shape} in checkpoint {reader.prefix})]]"))


def _restore_failed(cause: str, original: str) -> str:
    return (f"Restoring from checkpoint failed. This is most likely due to {cause} from the "
            f"checkpoint. Please ensure that you have not altered the graph expected based on "
            f"the checkpoint. Original error:\n\n{original}")


def _global_step_value(sess, global_step) -> int:
    if isinstance(global_step, (int, np.integer)) and not isinstance(global_step, bool):
        return int(global_step)
    return int(sess.run(global_step))


def _get_saver_or_default(graph: Graph | None = None) -> Saver:
    """The graph's one Saver (tf.GraphKeys.SAVERS), made over all variables if there is none."""
    graph = graph or get_default_graph()
    savers = graph.get_collection(SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {SAVERS}. Please indicate "
                               "which one to use by passing it to the constructor.")
        return savers[0]
    with graph.as_default():
        saver = Saver(sharded=True, allow_empty=True)
    graph.add_to_collection(SAVERS, saver)
    return saver
