"""Arrow record batches to torch tensors, with each column's dtype from the schema, never from
the batch.

A training loop sees thousands of batches of one dataset; a column must reach it with the same
dtype in every one, whether or not that batch happens to hold a null. The rules, by Arrow type:

* floating point (float16/32/64): that dtype; a null is NaN. Decimals: float64, a null is NaN.
* integers, and timestamps, dates, times and durations (as int64, in their unit): that integer
  dtype. An integer tensor has no null, so a null needs a choice, made with ``nulls``:

  - ``"error"`` (the default): a batch holding a null in such a column raises ValueError naming
    the column. Nothing is converted behind the loop's back, and columns without nulls keep
    sharing the received buffer.
  - ``"float"``: the column becomes float64 in every batch, a null NaN (exact for integers up
    to 2**53: not for large int64 ids).
  - ``"mask"``: the column keeps its integer dtype, a null becomes 0, and the batch gets a bool
    tensor ``<name>_valid`` (False where the row is null) in every batch.

  Booleans follow the same choice (``"float"``: 0.0/1.0/NaN; ``"mask"``: False plus
  ``<name>_valid``).
* fixed-size lists of those: 2-D tensors by the rules of their values (a null list is a row of
  nulls).
* anything else (strings, variable lists, structs): Python lists.

``nulls`` is one choice for every column or a dict of choices by column name (the others
"error"). "float" and "mask" apply to the columns the schema marks nullable, which for a dataset
made by SQL is every column (SQL results are nullable whatever their rows hold).
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Mapping, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc
import torch

# torch warns that tensors sharing a read-only Arrow buffer are not writable; sharing it is the
# point (no copy). The buffer is one this client received and nothing else reads: a tensor
# written in place changes only its own rows of its own batch.
warnings.filterwarnings("ignore", message="The given buffer is not writable", category=UserWarning, module=r"cachedb\.tensors")

NULL_CHOICES = ("error", "float", "mask")
# The suffix of the validity tensor nulls="mask" adds beside a column.
VALID_SUFFIX = "_valid"

Nulls = Union[str, Mapping[str, str]]

_TORCH_TYPES = {
    pa.int8(): torch.int8, pa.int16(): torch.int16, pa.int32(): torch.int32, pa.int64(): torch.int64,
    pa.uint8(): torch.uint8, pa.uint16(): torch.uint16, pa.uint32(): torch.uint32, pa.uint64(): torch.uint64,
    pa.float16(): torch.float16, pa.float32(): torch.float32, pa.float64(): torch.float64,
}


def check_nulls(nulls: Nulls, names: Optional[list] = None) -> None:
    """Refuses a ``nulls`` argument with an unknown choice, or naming a column not in names."""
    if type(nulls) is str and nulls in NULL_CHOICES:
        return
    choices = nulls.values() if isinstance(nulls, Mapping) else [nulls]
    for choice in choices:
        if choice not in NULL_CHOICES:
            raise ValueError(f"nulls must be one of {', '.join(NULL_CHOICES)} (or a dict of them by column), not {choice!r}")
    if isinstance(nulls, Mapping) and names is not None:
        unknown = sorted(set(nulls) - set(names))
        if unknown:
            raise ValueError(f"nulls names columns the read does not have: {', '.join(unknown)} (it reads {', '.join(names)})")


def _choice(nulls: Nulls, name: str) -> str:
    if type(nulls) is str:
        return nulls
    assert isinstance(nulls, Mapping)
    return nulls.get(name, "error")


def _share(values: pa.Array, dtype: torch.dtype) -> torch.Tensor:
    """A tensor over a fixed-width array's value buffer, without copying."""
    n = len(values)
    if n == 0:
        return torch.empty(0, dtype=dtype)
    width = values.type.bit_width // 8
    # A memoryview: torch asks the object itself for a writable buffer, which Arrow refuses for
    # read-only (received) buffers; the view keeps the buffer alive as long as the tensor.
    return torch.frombuffer(memoryview(values.buffers()[1]), dtype=dtype, count=n, offset=values.offset * width)


def _as_integers(column: pa.Array) -> Optional[pa.Array]:
    """The column as an integer array when its values are integers (temporal types as int64 in
    their unit), else None."""
    t = column.type
    if pa.types.is_integer(t):
        return column
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return column.view(pa.int32()).cast(pa.int64())
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return column.view(pa.int64())
    return None


def _floats(column: pa.Array, dtype: torch.dtype) -> torch.Tensor:
    if column.null_count == 0:
        return _share(column, dtype)
    return _share(pc.fill_null(column, pa.scalar(float("nan"), column.type)), dtype)


def _null_error(name: str, t: pa.DataType) -> ValueError:
    return ValueError(
        f"column {name!r} ({t}) holds a null in this batch, and its tensor dtype stays the schema's in every batch: "
        f"choose nulls='float' (float64 with NaN) or nulls='mask' (0 for null and a bool {name + VALID_SUFFIX!r} tensor) "
        f"for it, e.g. CacheDataset(..., nulls={{{name!r}: 'float'}}), or fill the nulls in the dataset's definition (COALESCE)"
    )


def _convert(name: str, column: pa.Array, nullable: bool, choice: str) -> Tuple[Any, Optional[torch.Tensor]]:
    """One column's tensor (or list), and its validity under nulls="mask" (else None)."""
    t = column.type
    dtype = _TORCH_TYPES.get(t)
    if dtype is not None and column.null_count == 0 and (choice == "error" or not nullable or dtype.is_floating_point):
        return _share(column, dtype), None  # the common case, first
    if pa.types.is_floating(t):
        return _floats(column, _TORCH_TYPES[t]), None
    if pa.types.is_decimal(t):
        return _floats(column.cast(pa.float64()), torch.float64), None
    ints = _as_integers(column)
    if ints is not None or pa.types.is_boolean(t):
        if nullable and choice == "float":
            return _floats(column.cast(pa.float64()) if ints is None else ints.cast(pa.float64()), torch.float64), None
        valid = None
        if nullable and choice == "mask":
            valid = _share(pc.is_valid(column).cast(pa.uint8()), torch.uint8).bool()
        elif column.null_count:
            raise _null_error(name, t)
        if ints is None:
            return _share(pc.fill_null(column, False).cast(pa.uint8()), torch.uint8).bool(), valid
        if ints.null_count:
            ints = pc.fill_null(ints, pa.scalar(0, ints.type))
        return _share(ints, _TORCH_TYPES[ints.type]), valid
    if pa.types.is_fixed_size_list(t) and (t.value_type in _TORCH_TYPES or pa.types.is_boolean(t.value_type)):
        n, k = len(column), t.list_size
        values = column.values.slice(column.offset * k, n * k)
        tensor, valid = _convert(name, values, nullable or t.value_field.nullable, choice)
        tensor = tensor.reshape(n, k)
        valid = None if valid is None else valid.reshape(n, k)
        if column.null_count:
            # A null list is a row of nulls. (The tensor may share Arrow's memory: written to
            # only as a copy.)
            rows = _share(pc.is_valid(column).cast(pa.uint8()), torch.uint8).bool()
            if tensor.is_floating_point():
                tensor = tensor.clone()
                tensor[~rows] = float("nan")
            elif valid is not None:
                tensor = tensor.clone()
                tensor[~rows] = 0
                valid = valid & rows[:, None]
            else:
                raise _null_error(name, t)
        return tensor, valid
    return column.to_pylist(), None


def column_to_tensor(column: Union[pa.Array, pa.ChunkedArray], field: Optional[pa.Field] = None, nulls: str = "error") -> Any:
    """Converts one Arrow column by the rules above (``field`` gives its name and nullability;
    without one the column counts as nullable). Shares the Arrow buffer where the layout allows.
    Under nulls="mask" it returns the pair (tensor, validity)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    check_nulls(nulls)
    name = field.name if field is not None else "column"
    nullable = field.nullable if field is not None else True
    tensor, valid = _convert(name, column, nullable, nulls)
    if nulls == "mask" and valid is not None:
        return tensor, valid
    return tensor


def arrow_to_tensors(batch: pa.RecordBatch, nulls: Nulls = "error") -> Dict[str, Any]:
    """The default conversion of a record batch: one tensor (or list) per column, by name, with
    the dtypes the batch's schema gives (see the module's rules); under nulls="mask" also
    ``<name>_valid`` for each nullable integer or boolean column."""
    check_nulls(nulls)
    out: Dict[str, Any] = {}
    schema = batch.schema
    for i, (name, column) in enumerate(zip(schema.names, batch.columns)):
        choice = _choice(nulls, name)
        # Nullability matters only to "float" and "mask" (and reading it costs a Field object).
        nullable = choice == "error" or schema.field(i).nullable
        tensor, valid = _convert(name, column, nullable, choice)
        out[name] = tensor
        if valid is not None:
            key = name + VALID_SUFFIX
            if key in schema.names:
                raise ValueError(f"nulls='mask' for column {name!r} would add {key!r}, which is a column of the read; rename one")
            out[key] = valid
    return out
