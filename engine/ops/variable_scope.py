"""tf.variable_scope and tf.get_variable, as TF1's variable_scope.py: scoped variable names,
reuse (True / AUTO_REUSE, inherited by inner scopes), scope objects re-entered, default names
made unique, scope defaults (initializer, regularizer, dtype, custom getter), and
regularization losses into REGULARIZATION_LOSSES."""

from __future__ import annotations

import enum
import functools
import inspect
import threading
import weakref

from engine import dtypes
from engine.graph import Graph, get_default_graph
from engine.ops import init_ops
from engine.ops.core import convert_to_tensor, graph_of
from engine.ops.variables import GraphKeys, Variable
from engine.shapes import as_shape

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "AUTO_REUSE",
    "VariableScope",
    "get_local_variable",
    "get_variable",
    "get_variable_scope",
    "no_regularizer",
    "variable_scope",
]


class _ReuseMode(enum.Enum):
    """reuse=tf.AUTO_REUSE: get the variable if it exists, else create it."""
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_):
    """A regularizer that adds no loss (to switch off a scope's default regularizer)."""
    return None


# -- the per-graph variable store and the per-thread scope stack ---------------------------

class _VariableStore:
    """Every variable tf.get_variable made in one graph, by full name."""

    def __init__(self):
        self._vars: dict[str, Variable] = {}
        self._lock = threading.Lock()

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None):
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        dtype = getattr(dtype, "base_dtype", dtype)
        kwargs = dict(name=name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, reuse=reuse,
                      trainable=True if trainable is None else trainable,
                      collections=collections, caching_device=caching_device,
                      partitioner=partitioner, validate_shape=validate_shape,
                      use_resource=use_resource)
        if custom_getter is None:
            return self._true_getter(constraint=constraint, **kwargs)
        if _accepts(custom_getter, "constraint"):
            kwargs["constraint"] = constraint
        return custom_getter(getter=self._true_getter, **kwargs)

    def _true_getter(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, constraint=None):
        is_scalar = isinstance(shape, (list, tuple)) and not shape
        if partitioner is not None and not is_scalar:
            raise NotImplementedError(f"Variable {name}: partitioned variables are not "
                                      "supported; drop the partitioner.")
        with self._lock:
            return self._get_single_variable(
                name, shape, dtype, initializer, regularizer, reuse,
                True if trainable is None else trainable, collections, caching_device,
                validate_shape, use_resource, constraint)

    def _get_single_variable(self, name, shape, dtype, initializer, regularizer, reuse,
                             trainable, collections, caching_device, validate_shape,
                             use_resource, constraint):
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        shape = as_shape(shape) if shape is not None else None
        if name in self._vars:
            return self._existing(name, shape, dtype, reuse)
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?")
        if initializer is None:
            if shape is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its `shape` "
                                 "argument must be specified.")
            initializer = _default_initializer(name, dtype)
        if from_value:
            init_val, variable_dtype = initializer, None
        else:
            if inspect.isclass(initializer):
                initializer = initializer(dtype=dtype)
            if shape is not None and shape.is_fully_defined():
                init_val = functools.partial(initializer, shape.as_list(), dtype=dtype)
                if _accepts(initializer, "partition_info"):
                    init_val = functools.partial(init_val, partition_info=None)
                variable_dtype = dtype.base_dtype
            elif _needs_no_arguments(initializer):
                init_val, variable_dtype = initializer, None
            else:
                raise ValueError("The initializer passed is not valid. It should be a callable "
                                 "with no arguments and the shape should not be provided or "
                                 "an instance of `tf.keras.initializers.*' and `shape` should "
                                 "be fully defined.")
        v = Variable(initial_value=init_val, name=name, trainable=trainable,
                     collections=collections, caching_device=caching_device,
                     dtype=variable_dtype, validate_shape=validate_shape,
                     constraint=constraint, use_resource=use_resource)
        self._vars[name] = v
        if regularizer:
            _add_regularization_loss(v, name, regularizer)
        return v

    def _existing(self, name: str, shape, dtype, reuse) -> Variable:
        found = self._vars[name]
        if reuse is False:
            where = "".join(f"  {frame}\n" for frame in reversed(found.op.traceback[-5:]))
            raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set "
                             f"reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally "
                             f"defined at:\n\n{where}")
        if shape is not None and not shape.is_compatible_with(found.get_shape()):
            raise ValueError(f"Trying to share variable {name}, but specified shape {shape} "
                             f"and found shape {found.get_shape()}.")
        if dtype.base_dtype is not found.dtype.base_dtype:
            raise ValueError(f"Trying to share variable {name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.name}.")
        return found


def _default_initializer(name: str, dtype: dtypes.DType):
    """TF's defaults: glorot_uniform for floats, zeros for integers and bools."""
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_bool:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.base_dtype} is required")


def _add_regularization_loss(v: Variable, name: str, regularizer) -> None:
    g = v.graph
    with g.as_default(), g.colocate_with(v), g.name_scope(name + "/Regularizer/"):
        loss = regularizer(v)
    if loss is not None:
        g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def _parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def _accepts(fn, arg: str) -> bool:
    params = _parameters(fn)
    return arg in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _needs_no_arguments(fn) -> bool:
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in _parameters(fn).values())


class _ScopeStack(threading.local):
    """One thread's current variable scope in one graph, and how often each scope name was
    opened (for default_name uniquification)."""

    def __init__(self):
        super().__init__()
        self.current_scope = VariableScope(False)
        self.variable_scopes_count: dict[str, int] = {}

    def open_variable_scope(self, scope_name: str) -> None:
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name,
                                                                                0) + 1

    def close_variable_subscopes(self, scope_name: str) -> None:
        for k in list(self.variable_scopes_count):
            if k.startswith(scope_name + "/"):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name: str) -> int:
        return self.variable_scopes_count.get(scope_name, 0)


_GRAPH_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STATE_LOCK = threading.Lock()


def _state(graph: Graph) -> tuple[_VariableStore, _ScopeStack]:
    with _STATE_LOCK:
        found = _GRAPH_STATE.get(graph)
        if found is None:
            found = _GRAPH_STATE[graph] = (_VariableStore(), _ScopeStack())
        return found


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    """An inner scope's custom getter calls the outer one, which calls the true getter."""
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)
    return wrapped_custom_getter


# -- VariableScope ---------------------------------------------------------------------------

class VariableScope:
    """What tf.get_variable reads from the current scope: the name prefix, reuse, and the
    defaults for initializer, regularizer, dtype, caching device and custom getter."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, name_scope="",
                 dtype=dtypes.float32, use_resource=None, constraint=None):
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        return self._name_scope

    @property
    def reuse(self):
        return self._reuse

    @property
    def initializer(self):
        return self._initializer

    @property
    def dtype(self):
        return self._dtype

    @property
    def use_resource(self):
        return self._use_resource

    @property
    def regularizer(self):
        return self._regularizer

    @property
    def caching_device(self):
        return self._caching_device

    @property
    def partitioner(self):
        return self._partitioner

    @property
    def custom_getter(self):
        return self._custom_getter

    @property
    def constraint(self):
        return self._constraint

    def reuse_variables(self) -> None:
        """From now on tf.get_variable in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype) -> None:
        self._dtype = dtype

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        self._custom_getter = custom_getter

    def get_collection(self, name: str) -> list:
        scope = self._name + "/" if self._name else ""
        return get_default_graph().get_collection(name, scope)

    def trainable_variables(self) -> list:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self) -> list:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store: _VariableStore, name: str, shape=None, dtype=None,
                     initializer=None, regularizer=None, reuse=None, trainable=None,
                     collections=None, caching_device=None, partitioner=None,
                     validate_shape=True, use_resource=None, custom_getter=None,
                     constraint=None):
        """The variable `<scope>/<name>`, created at the root name scope: variable names
        depend on the variable scope only."""
        regularizer = self._regularizer if regularizer is None else regularizer
        caching_device = self._caching_device if caching_device is None else caching_device
        partitioner = self._partitioner if partitioner is None else partitioner
        custom_getter = self._custom_getter if custom_getter is None else custom_getter
        reuse = self._reuse if reuse is None else reuse
        use_resource = self._use_resource if use_resource is None else use_resource
        full_name = f"{self.name}/{name}" if self.name else name
        g = get_default_graph()
        with g.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = convert_to_tensor(initializer).dtype.base_dtype
                if init_dtype is not dtypes.as_dtype(dtype).base_dtype:
                    raise ValueError(f"Initializer type '{init_dtype}' and explicit dtype "
                                     f"'{dtypes.as_dtype(dtype)}' don't match.")
            initializer = self._initializer if initializer is None else initializer
            constraint = self._constraint if constraint is None else constraint
            dtype = self._dtype if dtype is None else dtype
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape,
                use_resource=use_resource, custom_getter=custom_getter, constraint=constraint)


# -- tf.get_variable and friends -------------------------------------------------------------

def get_variable_scope() -> VariableScope:
    """The current variable scope of the default graph (in this thread)."""
    return _state(get_default_graph())[1].current_scope


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """Gets the variable `<current scope>/<name>` or creates it (see tf.variable_scope for
    when each happens). Without an initializer, floats get glorot_uniform, ints zeros."""
    store, _ = _state(get_default_graph())
    return get_variable_scope().get_variable(
        store, name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, custom_getter=custom_getter, constraint=constraint)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """tf.get_variable into LOCAL_VARIABLES, never trainable."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint)


def _get_unique_variable_scope(stack: _ScopeStack, prefix: str) -> str:
    current = stack.current_scope
    name = f"{current.name}/{prefix}" if current.name else prefix
    if stack.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while stack.variable_scope_count(f"{name}_{idx}") > 0:
        idx += 1
    return f"{prefix}_{idx}"


class _pure_variable_scope:  # noqa: N801 - TF's name
    """Switches the current variable scope (no name scope): to a copy of a given scope
    object, or to `<current>/<name>` inheriting reuse and every default."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None,
                 old_name_scope=None, dtype=None, use_resource=None, constraint=None):
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._overrides = {"initializer": initializer, "regularizer": regularizer,
                           "caching_device": caching_device, "partitioner": partitioner,
                           "dtype": dtype, "use_resource": use_resource}
        self._custom_getter = custom_getter
        self._old_name_scope = old_name_scope
        self._constraint = constraint
        self._stack = _state(get_default_graph())[1]
        self._last_scope = None
        self._old = None
        self._old_subscopes = None
        if isinstance(name_or_scope, VariableScope):
            self._new_name = name_or_scope.name
            src = name_or_scope
            # Jumping to a shared scope copies it, with this entry's reuse and defaults on top.
            self._cached_scope = VariableScope(
                src.reuse if not reuse else reuse, name=self._new_name,
                initializer=src.initializer, regularizer=src.regularizer,
                caching_device=src.caching_device, partitioner=src.partitioner,
                dtype=src.dtype, custom_getter=src.custom_getter,
                name_scope=src.original_name_scope, use_resource=src.use_resource,
                constraint=constraint)
            self._apply_overrides(self._cached_scope, src.custom_getter)

    def _apply_overrides(self, scope: VariableScope, old_getter) -> None:
        for key, value in self._overrides.items():
            if value is not None:
                getattr(scope, f"set_{key}")(value)
        if self._custom_getter is not None:
            scope.set_custom_getter(_maybe_wrap_custom_getter(self._custom_getter, old_getter))

    def __enter__(self) -> VariableScope:
        stack = self._stack
        self._old = stack.current_scope
        if isinstance(self._name_or_scope, VariableScope):
            stack.open_variable_scope(self._new_name)
            self._old_subscopes = dict(stack.variable_scopes_count)
            scope = self._cached_scope
        else:
            old = self._old
            self._new_name = (f"{old.name}/{self._name_or_scope}" if old.name
                              else self._name_or_scope)
            reuse = self._reuse or old.reuse     # reuse is inherited by sub-scopes
            name_scope = self._name_or_scope if self._old_name_scope is None else \
                self._old_name_scope
            scope = VariableScope(
                reuse, name=self._new_name, initializer=old.initializer,
                regularizer=old.regularizer, caching_device=old.caching_device,
                partitioner=old.partitioner, dtype=old.dtype, use_resource=old.use_resource,
                custom_getter=old.custom_getter, name_scope=name_scope,
                constraint=self._constraint)
            self._apply_overrides(scope, old.custom_getter)
            stack.open_variable_scope(self._new_name)
        stack.current_scope = scope
        self._last_scope = scope
        return scope

    def __exit__(self, *exc) -> None:
        stack = self._stack
        if stack.current_scope is not self._last_scope:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            stack.variable_scopes_count = self._old_subscopes
        else:
            stack.close_variable_subscopes(self._new_name)
        stack.current_scope = self._old


class variable_scope:  # noqa: N801 - TF's name
    """`with tf.variable_scope(name_or_scope, default_name=None, ..., reuse=None)`: opens the
    variable scope `<current>/<name>` and a name scope beside it. Re-entering a scope (by
    name or object) keeps the variable names but opens a fresh name scope (`s_1/`); reuse=True
    (or scope.reuse_variables()) makes get_variable return existing variables, AUTO_REUSE
    creates them when missing; inner scopes inherit reuse."""

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                 reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope=True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:
            reuse = None   # scopes always inherit; False means "not set" here
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError(f"The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope}")
        if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._settings = dict(initializer=initializer, regularizer=regularizer,
                              caching_device=caching_device, partitioner=partitioner,
                              custom_getter=custom_getter, dtype=dtype,
                              use_resource=use_resource, constraint=constraint)
        self._reuse = reuse
        self._graph = graph_of(values) if values else get_default_graph()
        self._auxiliary_name_scope = auxiliary_name_scope
        self._cached_pure = None
        self._name_scope_factory = None
        self._entered: list[list] = []

    def __enter__(self) -> VariableScope:
        contexts = [self._graph.as_default()]
        contexts[0].__enter__()
        self._entered.append(contexts)
        try:
            if self._cached_pure is not None:
                # Re-entering: a fresh name scope (uniquified again), the same variable scope.
                if self._name_scope_factory is not None:
                    self._enter_name_scope(self._name_scope_factory)
                return self._cached_pure.__enter__()
            return self._enter_uncached()
        except BaseException:
            self._unwind(None, None, None)
            raise

    def _enter_name_scope(self, factory) -> str:
        cm = factory()
        entered = cm.__enter__()
        self._entered[-1].append(cm)
        return entered

    def _enter_uncached(self) -> VariableScope:
        g = self._graph
        factory = None
        if not self._auxiliary_name_scope:
            current = g.get_name_scope()
            factory = functools.partial(g.name_scope, current + "/" if current else "")
        if self._name_or_scope is not None:
            is_name = isinstance(self._name_or_scope, str)
            short = self._name_or_scope if is_name else self._name_or_scope.name.split("/")[-1]
            old_name_scope = None
            if short or factory is not None:
                factory = factory or functools.partial(g.name_scope, short)
                entered = self._enter_name_scope(factory)
                old_name_scope = entered if is_name else self._name_or_scope.original_name_scope
            pure = _pure_variable_scope(self._name_or_scope, reuse=self._reuse,
                                        old_name_scope=old_name_scope, **self._settings)
        else:
            if self._reuse:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            factory = factory or functools.partial(g.name_scope, self._default_name)
            entered = self._enter_name_scope(factory)
            unique = _get_unique_variable_scope(_state(g)[1], self._default_name)
            pure = _pure_variable_scope(unique, old_name_scope=entered, **self._settings)
        scope = pure.__enter__()
        self._cached_pure = pure
        self._name_scope_factory = factory
        return scope

    def __exit__(self, *exc) -> None:
        try:
            self._cached_pure.__exit__(*exc)
        finally:
            self._unwind(*exc)

    def _unwind(self, *exc) -> None:
        for cm in reversed(self._entered.pop()):
            cm.__exit__(*exc)

