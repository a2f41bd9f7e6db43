"""The Python client's parts that need no server: rebatch, column_to_tensor, the hint when torch
is missing, and the package's typing marker."""

from __future__ import annotations

import decimal
import pathlib
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
import torch

import cachedb
from cachedb.dataset import column_to_tensor, rebatch


def batches_of(*sizes: int) -> list[pa.RecordBatch]:
    out, start = [], 0
    for n in sizes:
        out.append(pa.record_batch({"id": pa.array(range(start, start + n), pa.int64())}))
        start += n
    return out


@pytest.mark.parametrize(
    "sizes, batch_size, want",
    [
        ((10,), 4, [4, 4, 2]),
        ((3, 3, 3), 4, [4, 4, 1]),
        ((4, 4), 4, [4, 4]),
        ((1, 0, 1, 1), 2, [2, 1]),
        ((), 3, []),
        ((5,), 10, [5]),
    ],
)
def test_rebatch_cuts_any_stream_into_batch_size_rows(sizes, batch_size, want):
    got = list(rebatch(batches_of(*sizes), batch_size))
    assert [b.num_rows for b in got] == want
    ids = [v for b in got for v in b.column("id").to_pylist()]
    assert ids == list(range(sum(sizes)))


def test_rebatch_slices_without_copying_inside_one_batch():
    (source,) = batches_of(8)
    first, second = rebatch([source], 4)
    base = source.column(0).buffers()[1].address
    assert first.column(0).buffers()[1].address == base
    assert second.column(0).offset == 4 and second.column(0).buffers()[1].address == base


def test_column_to_tensor_shares_fixed_width_numbers():
    col = pa.array([1, 2, 3], pa.int32())
    t = column_to_tensor(col)
    assert t.dtype == torch.int32 and t.tolist() == [1, 2, 3]
    assert t.data_ptr() == col.buffers()[1].address
    sliced = column_to_tensor(pa.array([1.5, 2.5, 3.5], pa.float64()).slice(1))
    assert sliced.tolist() == [2.5, 3.5]


def test_column_to_tensor_converts_what_cannot_be_shared():
    with_nulls = column_to_tensor(pa.array([1, None, 3], pa.int64()))
    assert with_nulls.dtype == torch.float64
    assert with_nulls[0] == 1 and torch.isnan(with_nulls[1]) and with_nulls[2] == 3

    flags = column_to_tensor(pa.array([True, None, False]))
    assert flags.dtype == torch.bool and flags.tolist() == [True, False, False]

    times = column_to_tensor(pa.array([0, 1_000_000], pa.timestamp("us")))
    assert times.dtype == torch.int64 and times.tolist() == [0, 1_000_000]

    money = column_to_tensor(pa.array([decimal.Decimal("1.25"), decimal.Decimal("-2.50")], pa.decimal128(5, 2)))
    assert money.dtype == torch.float64 and money.tolist() == [1.25, -2.5]

    vectors = column_to_tensor(pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float32(), 2)).slice(1))
    assert vectors.shape == (2, 2) and vectors.tolist() == [[3.0, 4.0], [5.0, 6.0]]

    assert column_to_tensor(pa.array(["a", None])) == ["a", None]
    chunked = column_to_tensor(pa.chunked_array([[1, 2], [3]], pa.int16()))
    assert chunked.dtype == torch.int16 and chunked.tolist() == [1, 2, 3]


def test_without_torch_the_torch_parts_say_how_to_install_it():
    # sys.modules["torch"] = None makes `import torch` fail as if torch were not installed.
    script = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None
        import cachedb
        assert callable(cachedb.connect)
        try:
            cachedb.CacheDataset
        except ImportError as e:
            print(e)
        else:
            print("no ImportError")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=_child_env()).stdout
    assert "pip install 'cachedb[torch]'" in out, out


def test_the_package_is_typed():
    assert (pathlib.Path(cachedb.__file__).parent / "py.typed").is_file()


def _child_env() -> dict[str, str]:
    """The environment with the imported cachedb's directory on PYTHONPATH, so the child
    imports the same package this process tests."""
    import os

    parent = str(pathlib.Path(cachedb.__file__).parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([parent, os.environ.get("PYTHONPATH", "")])}
