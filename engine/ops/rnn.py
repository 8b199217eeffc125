"""The RNNs of TF1's rnn.py: the unrolled tf.nn.static_rnn (with sequence_length: zero outputs
and the state carried through past each sequence's end), static_bidirectional_rnn and
static_state_saving_rnn, one cell call per time step; and tf.nn.dynamic_rnn, one cell call in
a tf.while_loop over TensorArrays (TF's _dynamic_rnn_loop), and bidirectional_dynamic_rnn. All
in the variable scope `rnn` (or the one given), which the cell's weights are shared across."""

from __future__ import annotations

from typing import Any

from engine import dtypes, nest
from engine.graph import Tensor, get_default_graph
from engine.ops import array_ops, reduction_ops
from engine.ops import variable_scope as vs
from engine.ops.core import convert_to_tensor
from engine.ops.rnn_cell_impl import _concat, assert_like_rnncell
from engine.shapes import TensorShape

# The names tf.nn exports from this module (engine/nn.py star-imports it).
__all__ = ["bidirectional_dynamic_rnn", "dynamic_rnn", "static_bidirectional_rnn", "static_rnn",
           "static_state_saving_rnn"]


def _infer_state_dtype(explicit_dtype, state):
    if explicit_dtype is not None:
        return explicit_dtype
    if nest.is_nested(state):
        found = [element.dtype for element in nest.flatten(state)]
        if not found:
            raise ValueError(f"Unable to infer dtype from argument state={state}.")
        if any(d != found[0] for d in found):
            raise ValueError(f"Argument state={state} has tensors of different inferred "
                             f"dtypes. Unable to infer a single representative dtype. Dtypes "
                             f"received: {found}")
        return found[0]
    return state.dtype


def _rnn_step(time: int, sequence_length: Tensor, zero_output, state, call_cell):
    """One step with per-example lengths: where time >= sequence_length[b], row b of the
    output is zero and row b of the state is the previous state. TF's static_rnn also
    wraps this in two tf.conds that skip the cell when no (or every) row is finished; the
    selected values are the same, so this computes the cell at every step and selects
    (TF's skip_conditionals=True path, the one dynamic_rnn uses)."""
    flat_state = nest.flatten(state)
    flat_zero_output = nest.flatten(zero_output)
    copy_cond = time >= sequence_length

    def copy_one_through(old, new):
        if old.shape.ndims == 0:
            return new
        with get_default_graph().colocate_with(new.op):
            return array_ops.where(copy_cond, old, new)

    new_output, new_state = call_cell()
    nest.assert_same_structure(zero_output, new_output)
    nest.assert_same_structure(state, new_state)
    final_output = [copy_one_through(z, n)
                    for z, n in zip(flat_zero_output, nest.flatten(new_output))]
    final_state = [copy_one_through(s, n) for s, n in zip(flat_state, nest.flatten(new_state))]
    for output, zero in zip(final_output, flat_zero_output):
        output.set_shape(zero.shape)
    for substate, old in zip(final_state, flat_state):
        substate.set_shape(old.shape)
    return (nest.pack_sequence_as(zero_output, final_output),
            nest.pack_sequence_as(state, final_state))


def _check_inputs(inputs) -> None:
    if not nest.is_nested(inputs):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")


def _fixed_batch_size(inputs):
    """The static batch dim shared by every input (None if unknown); each input's other dims
    must be known."""
    first = inputs
    while nest.is_nested(first):
        first = first[0]
    first = convert_to_tensor(first)
    if first.shape.ndims == 1:
        return first, first.shape[0]
    batch = _with_rank_at_least(first, 2)[0]
    for flat in nest.flatten(inputs):
        shape = _with_rank_at_least(convert_to_tensor(flat), 2)
        if batch is not None and shape[0] is not None and shape[0] != batch:
            raise ValueError(f"Dimensions {batch} and {shape[0]} are not compatible")
        batch = batch if batch is not None else shape[0]
        for i, size in enumerate(shape.dims[1:]):
            if size is None:
                raise ValueError(f"Input size (dimension {i} of input {flat}) must be "
                                 "accessible via shape inference, but saw value None.")
    return first, batch


def _with_rank_at_least(tensor: Tensor, rank: int) -> TensorShape:
    shape = tensor.shape
    if shape.ndims is not None and shape.ndims < rank:
        raise ValueError(f"Shape {shape} must have rank at least {rank}")
    return shape if shape.ndims is not None else TensorShape([None] * rank)


def _zero_output(cell, batch_size, fixed_batch_size, dtype, state):
    def create(size):
        output = array_ops.zeros(_concat(batch_size, size), _infer_state_dtype(dtype, state))
        output.set_shape(TensorShape(_concat(fixed_batch_size, size, static=True)))
        return output
    return nest.pack_sequence_as(cell.output_size,
                                 [create(s) for s in nest.flatten(cell.output_size)])


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
               scope=None) -> tuple[list, Any]:
    """Runs `cell` over a Python list of T inputs ([batch, depth] each, or nested tuples of
    such): `state = initial_state or cell.zero_state(batch, dtype)`, then
    `output, state = cell(input_t, state)` per step. Returns (outputs, final_state).
    With sequence_length ([batch] ints), row b's outputs are zero from step
    sequence_length[b] on and its final state is the one at its last step."""
    assert_like_rnncell("cell", cell)
    _check_inputs(inputs)
    outputs = []
    with vs.variable_scope(scope or "rnn") as varscope:
        if varscope.caching_device is None:
            # TF reads the weights where each step runs, not where they live.
            varscope.set_caching_device(lambda op: op.device)
        first_input, fixed_batch_size = _fixed_batch_size(inputs)
        batch_size = fixed_batch_size if fixed_batch_size else \
            array_ops.shape(first_input)[0]
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise ValueError("If no initial_state is provided, argument `dtype` must be "
                                 "specified")
            if getattr(cell, "get_initial_state", None) is not None:
                state = cell.get_initial_state(inputs=None, batch_size=batch_size, dtype=dtype)
            else:
                state = cell.zero_state(batch_size, dtype)
        if sequence_length is not None:
            sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError(f"Argument `sequence_length` must be a vector of length "
                                 f"{batch_size}. Received sequence_length={sequence_length}.")
            zero_output = _zero_output(cell, batch_size, fixed_batch_size, dtype, state)
            sequence_length = array_ops.cast(sequence_length, dtypes.int32)
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            call_cell = lambda input_=input_, state=state: cell(input_, state)  # noqa: E731
            if sequence_length is not None:
                output, state = _rnn_step(time, sequence_length, zero_output, state, call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
        return outputs, state


def static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None,
                            scope=None) -> tuple[list, Any]:
    """static_rnn whose initial state comes from `state_saver.state(name)` and whose final
    state is handed to `state_saver.save_state(name, value)` before the last output and the
    final state are available."""
    state_size = cell.state_size
    state_is_tuple = nest.is_nested(state_size)
    if state_is_tuple != nest.is_nested(state_name):
        raise ValueError(f"Argument `state_name` should be the same type as "
                         f"`cell.state_size`. Received: state_name={state_name!s}, "
                         f"cell.state_size={state_size!s}.")
    if state_is_tuple:
        names = nest.flatten(state_name)
        if len(names) != len(nest.flatten(state_size)):
            raise ValueError(f"Number of elements in argument `state_name` and "
                             f"`cell.state_size` are mismatched. Received "
                             f"state_name={state_name} with {len(names)} elements and "
                             f"cell.state_size={state_size} with "
                             f"{len(nest.flatten(state_size))} elements.")
        initial_state = nest.pack_sequence_as(state_size,
                                              [state_saver.state(s) for s in names])
    else:
        initial_state = state_saver.state(state_name)
    outputs, state = static_rnn(cell, inputs, initial_state=initial_state,
                                sequence_length=sequence_length, scope=scope)
    if state_is_tuple:
        save_state = [state_saver.save_state(name, substate)
                      for name, substate in zip(nest.flatten(state_name), nest.flatten(state))]
    else:
        save_state = [state_saver.save_state(state_name, state)]
    with get_default_graph().control_dependencies(save_state):
        last = outputs[-1]
        outputs[-1] = nest.pack_sequence_as(
            last, [array_ops.identity(o) for o in nest.flatten(last)])
        state = nest.map_structure(array_ops.identity, state)
    return outputs, state


def _reverse_seq(input_seq, lengths):
    """The list of steps reversed; with lengths, only each row's first lengths[b] steps."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_input_seq = tuple(nest.flatten(input_) for input_ in input_seq)
    flat_results: list[list] = [[] for _ in range(len(input_seq))]
    for sequence in zip(*flat_input_seq):
        input_shape = TensorShape([None] * sequence[0].shape.ndims) \
            if sequence[0].shape.ndims is not None else TensorShape(None)
        for input_ in sequence:
            input_shape = input_shape.merge_with(input_.shape)
        joined = array_ops.stack(list(sequence))
        reversed_ = array_ops.reverse_sequence(joined, lengths, 0, 1)
        for r, flat_result in zip(array_ops.unstack(reversed_), flat_results):
            r.set_shape(input_shape)
            flat_result.append(r)
    return [nest.pack_sequence_as(input_, flat_result)
            for input_, flat_result in zip(input_seq, flat_results)]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None) -> tuple[list, Any, Any]:
    """A forward static_rnn (scope `bidirectional_rnn/fw`) and a backward one over the
    reversed steps (`bidirectional_rnn/bw`); each step's outputs are concatenated along
    depth. Returns (outputs, output_state_fw, output_state_bw)."""
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    _check_inputs(inputs)
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                                    sequence_length, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, output_state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw,
                                              dtype, sequence_length, scope=bw_scope)
    output_bw = _reverse_seq(tmp, sequence_length)
    flat_outputs = tuple(array_ops.concat([fw, bw], 1) for fw, bw in
                         zip(nest.flatten(output_fw), nest.flatten(output_bw)))
    return nest.pack_sequence_as(output_fw, flat_outputs), output_state_fw, output_state_bw


def _transpose_batch_time(x: Tensor) -> Tensor:
    """[batch, time, ...] <-> [time, batch, ...] (TF's _transpose_batch_time)."""
    rank = x.shape.ndims
    if rank is not None and rank < 2:
        raise ValueError(f"Expected input tensor {x} to have rank at least 2")
    if rank is None:
        perm = array_ops.concat([[1, 0], reduction_ops.range(2, reduction_ops.rank(x))], 0)
    else:
        perm = [1, 0] + list(range(2, rank))
    out = array_ops.transpose(x, perm)
    if rank is not None:
        dims = list(x.shape.dims)
        out.set_shape([dims[1], dims[0]] + dims[2:])
    return out


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory: bool = False, time_major: bool = False,
                scope=None) -> tuple[Any, Any]:
    """Runs `cell` over `inputs` ([batch, time, depth], or [time, batch, depth] when
    `time_major`; nested structures too) in a tf.while_loop (ops in scope `rnn/while`).
    Returns (outputs, final_state), outputs in the inputs' major order. With sequence_length
    ([batch] ints), row b's outputs are zero from step sequence_length[b] on and its final
    state is the one at its last step."""
    assert_like_rnncell("cell", cell)
    with vs.variable_scope(scope or "rnn") as varscope:
        if varscope.caching_device is None:
            varscope.set_caching_device(lambda op: op.device)
        flat_input = [convert_to_tensor(x) for x in nest.flatten(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = array_ops.cast(sequence_length, dtypes.int32)
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError(f"sequence_length must be a vector of length batch_size, "
                                 f"but saw shape: {sequence_length.shape}")
            sequence_length = array_ops.identity(sequence_length, name="sequence_length")
        fixed_batch = flat_input[0].shape.dims[1] if flat_input[0].shape.ndims else None
        batch_size = fixed_batch if fixed_batch is not None else \
            array_ops.shape(flat_input[0])[1]
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            if getattr(cell, "get_initial_state", None) is not None:
                state = cell.get_initial_state(inputs=None, batch_size=batch_size, dtype=dtype)
            else:
                state = cell.zero_state(batch_size, dtype)
        packed = nest.pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(cell, packed, state, parallel_iterations,
                                                 swap_memory, sequence_length, dtype,
                                                 fixed_batch, batch_size)
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_rnn_loop(cell, inputs, initial_state, parallel_iterations, swap_memory,
                      sequence_length, dtype, fixed_batch, batch_size):
    """TF's _dynamic_rnn_loop: the inputs unstacked into TensorArrays, one cell call per
    iteration, its output written to a TensorArray stacked after the loop."""
    from engine.ops.tensor_array_ops import TensorArray
    from engine.ops.while_loop import while_loop
    flat_input = nest.flatten(inputs)
    state_dtype = _infer_state_dtype(dtype, initial_state)
    time_steps = array_ops.shape(flat_input[0])[0]
    static_steps = flat_input[0].shape.dims[0] if flat_input[0].shape.ndims else None
    flat_output_size = nest.flatten(cell.output_size)
    zero_output = _zero_output(cell, batch_size, fixed_batch, dtype, initial_state) \
        if sequence_length is not None else None
    with get_default_graph().name_scope("dynamic_rnn") as scope:
        base = scope.rstrip("/")
        time = array_ops.constant(0, dtype=dtypes.int32, name="time")
        output_tas = [TensorArray(state_dtype, size=time_steps,
                                  element_shape=TensorShape(_concat(fixed_batch, size,
                                                                    static=True)),
                                  tensor_array_name=f"{base}/output_{i}")
                      for i, size in enumerate(flat_output_size)]
        input_tas = [TensorArray(x.dtype.base_dtype, size=time_steps,
                                 element_shape=x.shape[1:],
                                 tensor_array_name=f"{base}/input_{i}").unstack(x)
                     for i, x in enumerate(flat_input)]

    def body(time, output_tas, state):
        step_input = nest.pack_sequence_as(inputs, [ta.read(time) for ta in input_tas])
        for x, like in zip(nest.flatten(step_input), flat_input):
            x.set_shape(like.shape[1:])
        call_cell = lambda: cell(step_input, state)  # noqa: E731
        if sequence_length is not None:
            output, new_state = _rnn_step(time, sequence_length, zero_output, state,
                                          call_cell)
        else:
            output, new_state = call_cell()
        output_tas = [ta.write(time, out) for ta, out in zip(output_tas,
                                                             nest.flatten(output))]
        return time + 1, output_tas, new_state

    _, final_tas, final_state = while_loop(
        lambda time, *_: time < time_steps, body, (time, output_tas, initial_state),
        parallel_iterations=parallel_iterations, maximum_iterations=time_steps,
        swap_memory=swap_memory)
    outputs = []
    for ta in final_tas:
        stacked = ta.stack()
        out_shape = [static_steps] + list(ta.element_shape.dims or [])
        if ta.element_shape.dims is not None:
            stacked.set_shape(out_shape)
        outputs.append(stacked)
    return nest.pack_sequence_as(cell.output_size, outputs), final_state


def _reverse_time(input_, seq_lengths, seq_axis: int, batch_axis: int) -> Tensor:
    """`input_` reversed along time: with seq_lengths, only each row's first seq_lengths[b]
    steps (its padding stays in place), else the whole axis."""
    if seq_lengths is not None:
        return array_ops.reverse_sequence(input=input_, seq_lengths=seq_lengths,
                                          seq_axis=seq_axis, batch_axis=batch_axis)
    return array_ops.reverse(input_, axis=[seq_axis])


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory: bool = False,
                              time_major: bool = False, scope=None) -> tuple[Any, Any]:
    """A forward dynamic_rnn of `cell_fw` (variable scope `bidirectional_rnn/fw`) and a
    backward one of `cell_bw` (`bidirectional_rnn/bw`) over the inputs reversed in time,
    each row only over its first sequence_length[b] steps when sequence_length is given;
    the backward outputs are reversed back, so step t of both lines up. Returns
    ((output_fw, output_bw), (output_state_fw, output_state_bw)), outputs in the inputs'
    major order (concatenate them along depth for one [.., 2 * units] output)."""
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def reverse(x):
        return _reverse_time(x, sequence_length, time_axis, batch_axis)

    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            inputs_reverse = nest.map_structure(reverse, inputs)
            tmp, output_state_bw = dynamic_rnn(
                cell_bw, inputs_reverse, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
    # Outside both scopes, as TF reverses it (its op is a top-level `ReverseSequence`).
    output_bw = nest.map_structure(reverse, tmp)
    return (output_fw, output_bw), (output_state_fw, output_state_bw)
