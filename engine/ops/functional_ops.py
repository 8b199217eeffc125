"""tf.map_fn, tf.scan, tf.foldl and tf.foldr as TF1 builds them: the elements are unstacked
into TensorArrays, a tf.while_loop (bounded by maximum_iterations=n) reads element i per
iteration, and results are written to TensorArrays that are stacked after the loop."""

from __future__ import annotations

from engine import dtypes
from engine.ops import nest
from engine.ops.core import convert_to_tensor, graph_of, make_constant
from engine.ops.tensor_array_ops import TensorArray
from engine.ops.while_loop import while_loop

# The names `import engine as tf` exports from this module (engine/api.py star-imports it).
__all__ = [
    "foldl",
    "foldr",
    "map_fn",
    "scan",
]


def _elements(elems):
    flat = [convert_to_tensor(e, name="elems") for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors. Got "
                         f"{elems!r}")
    for e in flat:
        if e.shape.ndims == 0:
            raise ValueError(f"Elements in elems must be 1+ dimensional Tensors, not scalars: "
                             f"{e}")
    return flat


def _length(flat):
    """The number of elements: static when the first axis is known (TF does the same)."""
    from engine.ops.array_ops import shape
    static = flat[0].shape[0] if flat[0].shape.dims is not None else None
    return static if static is not None else shape(flat[0])[0]


def _unstacked(flat, n) -> list[TensorArray]:
    return [TensorArray(dtype=e.dtype, size=n, dynamic_size=False, infer_shape=True).unstack(e)
            for e in flat]


def _static_first_dim(flat) -> int | None:
    dims = [e.shape[0] for e in flat if e.shape.dims is not None]
    return next((d for d in dims if d is not None), None)


def _with_first_dim(results, n_static):
    for r in results:
        if r.shape.dims is not None and n_static is not None:
            r.set_shape([n_static] + list(r.shape.dims[1:]))
    return results


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name=None):
    """[fn(elems[0]), fn(elems[1]), ...] stacked; `elems` may be a nested structure of
    tensors sharing their first dimension (fn then gets that structure per element), and
    `dtype` gives fn's output structure and dtypes when they differ from the input's."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    parallel_iterations = parallel_iterations or 10
    g = graph_of(nest.flatten(elems))
    with g.as_default(), g.name_scope(name or "map"):
        flat = _elements(elems)
        out_dtypes = nest.flatten(dtype) if dtype is not None else [e.dtype for e in flat]
        n = _length(flat)
        elems_ta = _unstacked(flat, n)
        i = make_constant(0, name="Const")
        accs = [TensorArray(dtype=dtypes.as_dtype(dt), size=n, dynamic_size=False,
                            infer_shape=infer_shape) for dt in out_dtypes]

        def compute(i, tas):
            values = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(values)
            nest.assert_same_structure(dtype if dtype is not None else elems, out)
            tas = [ta.write(i, v) for ta, v in zip(tas, nest.flatten(out))]
            return i + 1, tas

        _, results = while_loop(lambda i, _: i < n, compute, (i, accs),
                                parallel_iterations=parallel_iterations, back_prop=back_prop,
                                swap_memory=swap_memory, maximum_iterations=n)
        stacked = _with_first_dim([r.stack() for r in results], _static_first_dim(flat))
        return nest.pack_sequence_as(dtype if dtype is not None else elems, stacked)


def scan(fn, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
         swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False, name=None):
    """The running accumulation a_i = fn(a_{i-1}, elems[i]) for every i, stacked (from the
    end when `reverse`); a_0 is `initializer`, or elems[0] (which is then the first output)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    g = graph_of(nest.flatten(elems))
    with g.as_default(), g.name_scope(name or "scan"):
        flat = _elements(elems)
        n = _length(flat)
        elems_ta = _unstacked(flat, n)
        structure = elems if initializer is None else initializer
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            first = 1
        else:
            a_flat = [convert_to_tensor(v) for v in nest.flatten(initializer)]
            first = 0
        accs = [TensorArray(dtype=a.dtype, size=n, element_shape=a.shape if infer_shape
                            else None, dynamic_size=False, infer_shape=infer_shape)
                for a in a_flat]
        if initializer is None:
            accs = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs, a_flat)]

        def compute(i, a_flat, tas):
            values = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(nest.pack_sequence_as(structure, a_flat), values)
            nest.assert_same_structure(structure, out)
            flat_out = nest.flatten(out)
            tas = [ta.write(i, v) for ta, v in zip(tas, flat_out)]
            return (i - 1 if reverse else i + 1), flat_out, tas

        if reverse:
            start, condition = n - 1 - first, (lambda i, _1, _2: i >= 0)
        else:
            start, condition = first, (lambda i, _1, _2: i < n)
        _, _, results = while_loop(condition, compute, (start, a_flat, accs),
                                   parallel_iterations=parallel_iterations,
                                   back_prop=back_prop, swap_memory=swap_memory,
                                   maximum_iterations=n)
        stacked = _with_first_dim([r.stack() for r in results], _static_first_dim(flat))
        return nest.pack_sequence_as(structure, stacked)


def foldl(fn, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
          swap_memory: bool = False, name=None):
    """fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1]); without an
    initializer, elems[0] starts the fold."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
                 name or "foldl", from_end=False)


def foldr(fn, elems, initializer=None, parallel_iterations: int = 10, back_prop: bool = True,
          swap_memory: bool = False, name=None):
    """foldl from the last element to the first."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
                 name or "foldr", from_end=True)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
          from_end: bool):
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    g = graph_of(nest.flatten(elems))
    with g.as_default(), g.name_scope(name):
        flat = _elements(elems)
        n = _length(flat)
        elems_ta = _unstacked(flat, n)

        def element(i):
            return nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])

        if from_end:
            i = n if initializer is not None else n - 1
            i = convert_to_tensor(i, dtype=dtypes.int32)
            a = initializer if initializer is not None else element(i)

            def compute(i, a):
                i = i - 1
                return [i, fn(a, element(i))]

            def condition(i, a):
                return i > 0
        else:
            a = initializer if initializer is not None else element(0)
            i = make_constant(0 if initializer is not None else 1, name="Const")

            def compute(i, a):
                return [i + 1, fn(a, element(i))]

            def condition(i, a):
                return i < n
        _, result = while_loop(condition, compute, [i, a],
                               parallel_iterations=parallel_iterations, back_prop=back_prop,
                               swap_memory=swap_memory, maximum_iterations=n)
        return result
