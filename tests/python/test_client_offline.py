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
    flags = column_to_tensor(pa.array([True, False, False]))
    assert flags.dtype == torch.bool and flags.tolist() == [True, False, False]

    times = column_to_tensor(pa.array([0, 1_000_000], pa.timestamp("us")))
    assert times.dtype == torch.int64 and times.tolist() == [0, 1_000_000]
    days = column_to_tensor(pa.array([0, 19_000], pa.date32()))
    assert days.dtype == torch.int64 and days.tolist() == [0, 19_000]

    money = column_to_tensor(pa.array([decimal.Decimal("1.25"), decimal.Decimal("-2.50")], pa.decimal128(5, 2)))
    assert money.dtype == torch.float64 and money.tolist() == [1.25, -2.5]

    vectors = column_to_tensor(pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float32(), 2)).slice(1))
    assert vectors.shape == (2, 2) and vectors.tolist() == [[3.0, 4.0], [5.0, 6.0]]

    assert column_to_tensor(pa.array(["a", None])) == ["a", None]
    chunked = column_to_tensor(pa.chunked_array([[1, 2], [3]], pa.int16()))
    assert chunked.dtype == torch.int16 and chunked.tolist() == [1, 2, 3]


# One column of each kind that may hold nulls, as a dataset's schema has them (every column
# nullable), in batches cut from one table at every batch size: most batches hold no null,
# some do.
NULLY_SCHEMA = pa.schema(
    [
        ("i32", pa.int32()), ("i64", pa.int64()), ("u8", pa.uint8()), ("f32", pa.float32()), ("f64", pa.float64()),
        ("flag", pa.bool_()), ("ts", pa.timestamp("us")), ("day", pa.date32()), ("money", pa.decimal128(9, 2)),
        ("vec", pa.list_(pa.float32(), 2)), ("ivec", pa.list_(pa.int16(), 2)),
    ]
)


def nully_table(rows: int = 500) -> pa.Table:
    """Column k is null where (row + k) % 150 == 0: a few rows near 150, 300 and 450."""

    def maybe(i, v, k):
        return None if (i + k) % 150 == 0 else v

    ids = range(1, rows + 1)
    return pa.table(
        {
            "i32": [maybe(i, i, 0) for i in ids],
            "i64": [maybe(i, i << 40, 1) for i in ids],
            "u8": [maybe(i, i % 200, 2) for i in ids],
            "f32": [maybe(i, i / 4, 3) for i in ids],
            "f64": [maybe(i, i / 8, 4) for i in ids],
            "flag": [maybe(i, i % 3 == 0, 5) for i in ids],
            "ts": [maybe(i, i * 1_000_000, 6) for i in ids],
            "day": [maybe(i, i, 7) for i in ids],
            "money": [maybe(i, decimal.Decimal(i) / 4, 8) for i in ids],
            "vec": [maybe(i, [i, -i], 9) for i in ids],
            "ivec": [maybe(i, [i, i + 1], 10) for i in ids],
        },
        schema=NULLY_SCHEMA,
    )


WANT_FLOAT = {
    "i32": torch.float64, "i64": torch.float64, "u8": torch.float64, "f32": torch.float32, "f64": torch.float64, "flag": torch.float64,
    "ts": torch.float64, "day": torch.float64, "money": torch.float64, "vec": torch.float32, "ivec": torch.float64,
}
WANT_MASK = {
    "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "f32": torch.float32, "f64": torch.float64, "flag": torch.bool,
    "ts": torch.int64, "day": torch.int64, "money": torch.float64, "vec": torch.float32, "ivec": torch.int16,
}


@pytest.mark.parametrize("batch_size", [1, 7, 36, 100, 500])
def test_dtypes_come_from_the_schema_with_or_without_nulls(batch_size):
    table = nully_table()
    batches = list(rebatch(table.to_batches(max_chunksize=64), batch_size))
    with_nulls = [b for b in batches if any(c.null_count for c in b.columns)]
    assert with_nulls and (batch_size == 500 or len(with_nulls) < len(batches)), "the case needs batches with and without nulls"
    for nulls, want in (("float", WANT_FLOAT), ("mask", WANT_MASK)):
        got = [cachedb.arrow_to_tensors(b, nulls) for b in batches]
        for out in got:
            assert {k: v.dtype for k, v in out.items() if not k.endswith("_valid")} == want, nulls
        # Every value comes through: nulls as NaN (float) or 0 with a False validity (mask).
        for name in ("i32", "i64", "u8", "flag", "ts", "day", "ivec"):
            column = [v for b in batches for v in b.column(name).to_pylist()]
            if nulls == "float":
                values = torch.cat([out[name] for out in got])
                nan = torch.isnan(values)
                assert nan.reshape(len(column), -1).all(dim=1).tolist() == [v is None for v in column]
            else:
                valid = torch.cat([out[name + "_valid"] for out in got])
                assert valid.reshape(len(column), -1).all(dim=1).tolist() == [v is not None for v in column]
                values = torch.cat([out[name] for out in got])
                assert values[~valid].eq(0).all()
        if nulls == "mask":
            assert [k for k in got[0] if k.endswith("_valid")] == [n + "_valid" for n in ("i32", "i64", "u8", "flag", "ts", "day", "ivec")]
    # int64 beyond 2**53 stays exact under "mask", not under "float"
    big = pa.record_batch({"id": pa.array([2**60 + 1, None], pa.int64())})
    assert cachedb.arrow_to_tensors(big, "mask")["id"][0].item() == 2**60 + 1


def test_a_null_in_an_integer_column_is_an_error_unless_chosen():
    table = nully_table()
    clean = table.slice(0, 100).to_batches()[0]
    assert all(c.null_count == 0 for c in clean.columns)
    out = cachedb.arrow_to_tensors(clean)
    assert {k: v.dtype for k, v in out.items()} == WANT_MASK and "i32_valid" not in out
    # Zero copy where no null: the tensor is a view of the column's buffer.
    assert out["i64"].data_ptr() == clean.column(1).buffers()[1].address + clean.column(1).offset * 8
    dirty = table.slice(130, 30).to_batches()[0]
    with pytest.raises(ValueError, match=r"column 'i32' \(int32\) holds a null.*nulls='float'.*nulls='mask'"):
        cachedb.arrow_to_tensors(dirty)
    # Chosen for some columns only: the others stay strict, float columns take NaN anyway.
    per_column = {"i32": "float", "i64": "mask", "u8": "float", "flag": "mask", "ts": "float", "day": "float", "ivec": "mask"}
    out = cachedb.arrow_to_tensors(dirty, per_column)
    assert out["i32"].dtype == torch.float64 and out["i64"].dtype == torch.int64 and "i64_valid" in out and "i32_valid" not in out
    assert torch.isnan(out["f32"]).sum() == 1 and out["f32"].dtype == torch.float32
    with pytest.raises(ValueError, match="nulls must be one of"):
        cachedb.arrow_to_tensors(dirty, "zero")
    clash = pa.record_batch({"a": pa.array([1, None]), "a_valid": pa.array([1, 2])})
    with pytest.raises(ValueError, match="a_valid"):
        cachedb.arrow_to_tensors(clash, "mask")


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


def test_resume_states_combine_into_the_earlier_jobs_of_an_epoch():
    from cachedb.resume import WHOLE_SHARE, Position, decode_resumed, encode_resumed, resume_position, state_of

    reader = {"dataset": "d", "generation": 2, "order_key": "k", "seed": 1, "shuffle": True, "window_rows": None, "chunk_rows": None,
              "batch_size": 10, "shares": "exact", "world_size": 3, "rank": 0}

    def state(rank, epoch, offset, complete=False, resumed=(), world=2):
        return state_of({**reader, "world_size": world, "rank": rank}, Position(epoch, offset, resumed), complete)

    for jobs in ([], [[5]], [[3000, 3000], [0, 5, 5, 5, 7]]):
        assert decode_resumed(encode_resumed(jobs)) == jobs
    assert encode_resumed([[3000, 3000], [0, 5, 5, 5, 7]]) == "3000*2;0,5*3,7"
    # A finished share is the next epoch's start.
    assert state(0, 4, 120, complete=True)["epoch"] == 5 and state(0, 4, 120, complete=True)["offset"] == 0
    # Two ranks of a 2-rank job, in any order, resume a 3-rank job: their offsets become an earlier job.
    assert resume_position([state(1, 4, 130), state(0, 4, 120)], reader) == Position(4, 0, [[120, 130]])
    # One rank had finished the epoch when the other saved: it consumed its whole share.
    assert resume_position([state(0, 4, 120), state(1, 4, 200, complete=True)], reader) == Position(4, 0, [[120, WHOLE_SHARE]])
    # A chain: the earlier jobs of the states come first.
    chained = [state(r, 4, 20, resumed=[[120, 130]], world=3) for r in range(3)]
    assert resume_position(chained, {**reader, "world_size": 2}) == Position(4, 0, [[120, 130], [20, 20, 20]])
    # On the same world size each rank takes its own, earlier jobs and all.
    assert resume_position(chained, {**reader, "rank": 2}) == Position(4, 20, [[120, 130]])
    all_done = [state(r, 4, 200, complete=True) for r in range(2)]
    assert resume_position(all_done, reader) == Position(5)
    for bad, match in [
        ([state(0, 4, 120)], "all 2 ranks"),
        ([state(0, 4, 120), state(0, 4, 120)], "each rank's state once"),
        ([state(0, 4, 120), state(1, 5, 30)], "not of one moment"),
        ([state(0, 4, 120), state(1, 4, 120, world=3)], "world sizes"),
        ([state(0, 4, 120), {**state(1, 4, 130), "batch_size": 11}], "batch_size=11"),
        ([state(0, 4, 120), {**state(1, 4, 130), "order_key": "other"}], "order key other"),
        ([state(0, 4, 120, resumed=[[1, 2]]), state(1, 4, 130)], "different earlier jobs"),
    ]:
        with pytest.raises(ValueError, match=match):
            resume_position(bad, reader)
    # A state of an older client (no order key; "complete") is valid for its own generation only.
    legacy = {"dataset": "d", "generation": 2, "seed": 1, "epoch": 3, "world_size": 3, "rank": 0, "batch_size": 10, "shares": "exact",
              "offset": 70, "complete": True}
    assert resume_position(legacy, reader) == Position(4)
    with pytest.raises(ValueError, match="generation 2"):
        resume_position(legacy, {**reader, "generation": 3})
