"""tf.layers.Layer, as TF1's layers/base.py: each layer owns a variable scope (its name, made
unique per graph: `dense`, `dense_1`), creates its weights with tf.get_variable inside it,
builds its ops in that scope's name scope, reuses its weights on every later call, and puts
its updates into UPDATE_OPS and its weight regularization losses into
REGULARIZATION_LOSSES."""

from __future__ import annotations

import collections
import re
import threading
import weakref

from engine import dtypes
from engine.graph import Tensor, get_default_graph
from engine.ops import variable_scope as vs
from engine.ops.core import convert_to_tensor, graph_of
from engine.ops.variables import GraphKeys

# graph -> {base name: how many unnamed layers took it} (Keras' per-graph uid map)
_LAYER_UIDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_UID_LOCK = threading.Lock()


def to_snake_case(name: str) -> str:
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


def _unique_layer_name(base: str) -> str:
    """Keras' rule: unnamed layers are `dense_1`, `dense_2`, ... per graph (the variable
    scope, made unique on its own, is what names the weights: `dense`, `dense_1`)."""
    with _UID_LOCK:
        counts = _LAYER_UIDS.setdefault(get_default_graph(), collections.Counter())
        counts[base] += 1
        return f"{base}_{counts[base]}"


def _add_to_collection(items, key: str) -> None:
    graph = get_default_graph()
    present = {id(x) for x in graph.get_collection(key)}
    for item in items:
        if id(item) not in present:
            graph.add_to_collection(key, item)
            present.add(id(item))


class Layer:
    """Base of every tf.layers layer: subclasses define build(input_shape) (creating weights
    with add_weight) and call(inputs, ...)."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        scope = kwargs.pop("_scope", None)
        self._reuse = kwargs.pop("_reuse", None)
        activity_regularizer = kwargs.pop("activity_regularizer", None)
        if kwargs:
            raise TypeError(f"Keyword argument not understood: {', '.join(sorted(kwargs))}")
        self.trainable = trainable
        self.built = False
        self._dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
        self._activity_regularizer = activity_regularizer
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._updates: list = []
        self._losses: list = []
        self._graph = None
        self._init_set_name(name)
        self._scope = None
        if scope:
            with vs.variable_scope(scope) as captured:
                self._scope = captured
        self._current_scope = None
        self._always_reuse_scope = None

    def _init_set_name(self, name) -> None:
        base = name.name if isinstance(name, vs.VariableScope) else name
        self._name = name
        if not name:
            base = to_snake_case(type(self).__name__)
            self._name = _unique_layer_name(base)
        self._base_name = base

    # -- identity ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def scope_name(self) -> str:
        if not self._scope:
            raise ValueError(f'No name available for layer scope because the layer "{self._name}"'
                             " has not been used yet. The scope name  is determined the first "
                             "time the layer instance is called. You must therefore call the "
                             "layer before querying `scope_name`.")
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self) -> list:
        return list(self._updates)

    @property
    def losses(self) -> list:
        return list(self._losses)

    # -- what subclasses use ----------------------------------------------------------------

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def add_update(self, updates, inputs=None) -> None:
        for u in updates if isinstance(updates, (list, tuple)) else [updates]:
            self._updates.append(u.op if isinstance(u, Tensor) else u)

    def add_loss(self, losses, inputs=None) -> None:
        new = [x for x in (losses if isinstance(losses, (list, tuple)) else [losses])
               if x is not None]
        self._losses.extend(new)
        _add_to_collection(new, GraphKeys.REGULARIZATION_LOSSES)

    def _set_scope(self, scope=None) -> None:
        if self._scope is not None:
            return
        if self._reuse:
            with vs.variable_scope(scope if scope is not None else self._base_name) as captured:
                self._scope = captured
        else:
            with vs.variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured

    def _name_scope(self) -> str:
        return self._current_scope.original_name_scope

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, partitioner=None, use_resource=None,
                   **kwargs):
        """A weight `<layer scope>/<name>` from tf.get_variable (reused once built)."""
        dtype = dtypes.as_dtype(dtype or self.dtype or dtypes.float32)
        self._set_scope(None)
        reuse = self.built or self._reuse
        existing = set(id(w) for w in self._trainable_weights + self._non_trainable_weights)
        g = get_default_graph()
        with vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with g.name_scope(self._name_scope()):
                if initializer is None:
                    initializer = scope.initializer
                variable = vs.get_variable(name, shape=shape, dtype=dtype,
                                           initializer=initializer,
                                           trainable=trainable and self.trainable,
                                           constraint=constraint, partitioner=partitioner,
                                           use_resource=use_resource)
                if id(variable) not in existing:
                    if regularizer is not None:
                        with g.name_scope(name + "/Regularizer"):
                            self.add_loss(regularizer(variable))
                    target = self._trainable_weights if trainable else \
                        self._non_trainable_weights
                    target.append(variable)
        return variable

    add_variable = add_weight

    # -- calling ----------------------------------------------------------------------------

    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)
        self._set_scope(scope)
        graph = graph_of(inputs)
        if self._graph is not None and graph is not self._graph:
            raise ValueError(f"Input graph and Layer graph are not the same: layer "
                             f"'{self.name}' was first called on another graph.")
        self._graph = graph
        if self.built:
            if self._always_reuse_scope is None:
                self._always_reuse_scope = vs.variable_scope(self._scope, reuse=True,
                                                             auxiliary_name_scope=False)
            scope_cm = self._always_reuse_scope
        else:
            scope_cm = vs.variable_scope(self._scope, reuse=self._reuse,
                                         auxiliary_name_scope=False)
        updates_before = len(self._updates)
        with graph.as_default(), scope_cm as current:
            self._current_scope = current
            with graph.name_scope(self._name_scope()):
                if not self.built:
                    self._maybe_build(inputs)
                outputs = self.call(inputs, *args, **kwargs)
                if self._activity_regularizer is not None:
                    with graph.name_scope("ActivityRegularizer"):
                        self.add_loss(self._activity_regularizer(outputs))
        _add_to_collection(self._updates[updates_before:], GraphKeys.UPDATE_OPS)
        return outputs

    def _maybe_build(self, inputs) -> None:
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        first = convert_to_tensor(first)
        if self._dtype is None:
            self._dtype = first.dtype.base_dtype
        shapes = [convert_to_tensor(x).shape for x in inputs] \
            if isinstance(inputs, (list, tuple)) else first.shape
        self.build(shapes)
        self.built = True

    def apply(self, inputs, *args, **kwargs):
        return self(inputs, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} '{self.name}'>"

