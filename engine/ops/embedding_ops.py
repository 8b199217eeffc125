"""tf.nn.embedding_lookup over one parameter tensor or a list of shards ("mod" or "div"
partitioning, as TF assigns ids), with max_norm clipping."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.ops import array_ops as A  # noqa: N812
from engine.ops import math_ops as M  # noqa: N812
from engine.ops.core import convert_to_tensor, graph_of, op_scope

__all__ = ["embedding_lookup"]


def _clip(embeddings, ids, max_norm):
    """Scales each embedding (the dims after the ids' dims) down to l2-norm max_norm."""
    if max_norm is None:
        return embeddings
    ids_rank, rank = ids.shape.ndims, embeddings.shape.ndims
    if ids_rank is None or rank is None:
        raise ValueError("embedding_lookup(max_norm=...) needs ids and params of known rank.")
    dtype = embeddings.dtype.base_dtype
    norm = M.sqrt(M.reduce_sum(M.square(embeddings), list(range(ids_rank, rank)),
                               keepdims=True))
    limit = A.constant(max_norm, dtype=dtype)
    return M.divide(M.multiply(embeddings, limit), M.maximum(norm, limit))


def _shard_tables(sizes: list[int], strategy: str, total: int) -> tuple[np.ndarray, np.ndarray]:
    """For every id 0..total-1: its shard and its row in that shard (TF's formulas)."""
    shards = len(sizes)
    ids = np.arange(total, dtype=np.int64)
    if strategy == "mod":
        return ids % shards, ids // shards
    per, extras = total // shards, total % shards
    shard = np.maximum(ids // (per + 1), (ids - extras) // max(per, 1))
    row = np.where(shard < extras, ids % (per + 1), (ids - extras) % max(per, 1))
    return shard, row


def _check_shard_sizes(params, strategy: str) -> list[int]:
    sizes = [p.shape[0] if p.shape.ndims else None for p in params]
    if None in sizes:
        raise ValueError("A sharded embedding_lookup needs the first dimension of every shard "
                         "known at graph-building time; got shapes "
                         f"{[str(p.shape) for p in params]}.")
    shard, row = _shard_tables(sizes, strategy, sum(sizes))
    for p, size in enumerate(sizes):
        want = int(np.sum(shard == p))
        if want != size or (want and int(row[shard == p].max()) != size - 1):
            raise ValueError(f"Shard {p} of embedding_lookup has {size} rows, but "
                             f"partition_strategy '{strategy}' over {sum(sizes)} ids gives it "
                             f"{want}.")
    return sizes


def _sharded_lookup(params, ids, strategy: str):
    """Each shard gathers, on its own device, the rows its ids map to; the results are merged
    with a select per shard. (TF uses DynamicPartition/DynamicStitch; ids are mapped here
    through constant id->shard and id->row tables.)"""
    sizes = _check_shard_sizes(params, strategy)
    shard, row = _shard_tables(sizes, strategy, sum(sizes))
    index_dtype = ids.dtype.base_dtype
    shard_of = A.gather(A.constant(shard.astype(np.int32), name="shard_of_id"), ids)
    row_of = A.gather(A.constant(row.astype(index_dtype.numpy_dtype), name="row_of_id"), ids)
    result = None
    for p, param in enumerate(params):
        mine = M.equal(shard_of, A.constant(p, dtype=dtypes.int32))
        with param.graph.colocate_with(param.op):
            rows = A.gather(param, A.where_v2(mine, row_of, A.zeros_like(row_of)))
        rank = rows.shape.ndims
        extra = rank - ids.shape.ndims if rank is not None and ids.shape.ndims is not None \
            else None
        if extra is None:
            raise ValueError("A sharded embedding_lookup needs ids and params of known rank.")
        mask = A.reshape(mine, A.concat([A.shape(ids), np.ones(extra, np.int32)], 0)) \
            if extra else mine
        result = A.where_v2(mask, rows, A.zeros_like(rows) if result is None else result)
    return result


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm=None):
    """Rows of params for ids: shape ids.shape + params.shape[1:]. A list of shards is read as
    one table split along dim 0, "mod" (id % n -> shard) or "div" (contiguous ranges)."""
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be one "
                         "of either `mod` or `div`.")
    g = graph_of(params, ids)
    with op_scope(g, name, "embedding_lookup") as scope:
        tensors = [convert_to_tensor(p, name="params") for p in params]
        ids_t = convert_to_tensor(ids, name="ids")
        if len(tensors) == 1:
            with g.colocate_with(tensors[0].op):
                result = _clip(A.gather(tensors[0], ids_t, name=scope), ids_t, max_norm)
            return A.identity(result)
        return _clip(_sharded_lookup(tensors, ids_t, partition_strategy), ids_t, max_norm)
