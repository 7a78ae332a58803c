"""What the writers take: pyarrow tables, batches and readers, pandas and polars DataFrames,
arro3 and any Arrow PyCapsule object, and what happens when an export fails.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pytest
import zstdpool.ipc as zi
from zstdpool.errors import IpcError

from tests.helpers.ipc_writer import (
    FORMATS,
    INPUT_TABLE,
    assert_tables_equal,
    failing_reader,
    new_writer,
    pa_read,
    write_one,
)
from tests.helpers.peers import arro3_core as arro3
from tests.helpers.peers import pd, pl


class StreamOnly:
    """Exposes a table only through __arrow_c_stream__."""

    def __init__(self, obj):
        self._obj = obj

    def __arrow_c_stream__(self, requested_schema=None):
        return self._obj.__arrow_c_stream__(requested_schema)


class ArrayOnly:
    """Exposes a record batch only through __arrow_c_array__."""

    def __init__(self, obj):
        self._obj = obj

    def __arrow_c_array__(self, requested_schema=None):
        return self._obj.__arrow_c_array__(requested_schema)


def make_input(kind: str):
    """`INPUT_TABLE` as `kind` of input, and the pyarrow table it should come back as."""
    t = INPUT_TABLE
    if kind == "table":
        return t, t
    if kind == "record_batch":
        return t.combine_chunks().to_batches()[0], t
    if kind == "reader":
        return pa.RecordBatchReader.from_stream(t), t
    if kind == "generator_reader":
        batches = t.to_batches(max_chunksize=7)
        return pa.RecordBatchReader.from_batches(t.schema, (b for b in batches)), t
    if kind == "c_stream_only":
        return StreamOnly(t), t
    if kind == "c_array_only":
        return ArrayOnly(t.combine_chunks().to_batches()[0]), t
    if kind == "arro3_table":
        return arro3.Table.from_arrow(t), t
    if kind == "arro3_batch":
        return arro3.RecordBatch.from_arrow(t.combine_chunks().to_batches()[0]), t
    raise AssertionError(kind)


INPUT_KINDS = [
    "table",
    "record_batch",
    "reader",
    "generator_reader",
    "c_stream_only",
    "c_array_only",
    "arro3_table",
    "arro3_batch",
]


def test_every_input_kind_one_shot(subtests):
    for kind in INPUT_KINDS:
        for fmt in FORMATS:
            with subtests.test(kind=kind, fmt=fmt):
                data, expected = make_input(kind)
                assert_tables_equal(pa_read(fmt, write_one(fmt, data)), expected)


def test_every_input_kind_through_a_writer(subtests):
    for kind in INPUT_KINDS:
        for method in ("write", "write_batch", "write_table"):
            for fmt in FORMATS:
                with subtests.test(kind=kind, method=method, fmt=fmt):
                    sink = io.BytesIO()
                    with new_writer(fmt, sink, INPUT_TABLE.schema) as w:
                        data, expected = make_input(kind)
                        getattr(w, method)(data)
                        data, _ = make_input(kind)  # readers are consumed: make another
                        getattr(w, method)(data)
                    got = pa_read(fmt, sink.getvalue())
                    assert_tables_equal(got, pa.concat_tables([expected] * 2))


def test_pandas_dataframe_keeps_its_index():
    df = pd.DataFrame(
        {
            "x": [1, 2, 3, 4],
            "f": [0.5, None, 2.5, 3.0],
            "s": ["a", "b", None, "d"],
            "cat": pd.Categorical(["u", "v", "u", "w"]),
            "when": pd.date_range("2024-01-01", periods=4, freq="h", tz="Europe/Paris"),
        },
        index=pd.Index([10, 20, 30, 40], name="idx"),
    )
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, df))
        assert b"pandas" in got.schema.metadata
        pd.testing.assert_frame_equal(got.to_pandas(), df)
        # through a writer too, with the schema pyarrow derives
        sink = io.BytesIO()
        with new_writer(fmt, sink, pa.Schema.from_pandas(df)) as w:
            w.write(df)
            w.write(df)
        pd.testing.assert_frame_equal(
            pa_read(fmt, sink.getvalue()).to_pandas(), pd.concat([df, df])
        )


def test_pandas_range_index_round_trips():
    df = pd.DataFrame({"a": range(5)}, index=pd.RangeIndex(3, 13, 2, name="r"))
    got = pa_read("stream", zi.write_stream(df)).to_pandas()
    pd.testing.assert_frame_equal(got, df)


def test_polars_dataframe():
    import datetime as dt

    df = pl.DataFrame(
        {
            "i": [1, None, 3],
            "s": ["a", None, "c"],
            "l": [[1, 2], None, []],
            "st": [{"x": 1, "y": "q"}, None, {"x": 3, "y": None}],
            "cat": pl.Series(["u", "v", "u"], dtype=pl.Categorical),
            "ts": pl.Series(
                [dt.datetime(2020, 1, 1), None, dt.datetime(2021, 5, 6)]
            ).dt.replace_time_zone("UTC"),
            "d": [dt.date(2020, 1, 1), None, dt.date(1900, 2, 3)],
            "bin": [b"x", None, b"\x00\xff"],
        }
    )
    for fmt in FORMATS:
        got = pa_read(fmt, write_one(fmt, df))
        back = pl.from_arrow(got)
        assert back.schema == df.schema
        assert back.equals(df)


def test_unsupported_objects_raise_type_error():
    bad_objects = [1, "abc", [1, 2], {"a": [1]}, None, b"bytes", object()]
    for bad in bad_objects:
        with pytest.raises(TypeError, match="cannot write"):
            zi.write_stream(bad)
        with pytest.raises(TypeError, match="cannot write"):
            zi.write_file(bad)
    sink = io.BytesIO()
    with zi.new_stream(sink, INPUT_TABLE.schema) as w:
        for bad in bad_objects:
            with pytest.raises(TypeError, match="cannot write"):
                w.write(bad)
        w.write(INPUT_TABLE)  # still usable
    assert_tables_equal(pa_read("stream", sink.getvalue()), INPUT_TABLE)


def test_array_only_object_must_hold_a_record_batch():
    with pytest.raises(TypeError):
        zi.write_stream(ArrayOnly(pa.array([1, 2, 3])))


class BrokenExport:
    """Claims the stream interface; its export raises or returns the wrong capsule."""

    def __init__(self, result):
        self._result = result

    def __arrow_c_stream__(self, requested_schema=None):
        if isinstance(self._result, BaseException):
            raise self._result
        return self._result


class BrokenArrayExport:
    """Claims the array interface; its export raises."""

    def __arrow_c_array__(self, requested_schema=None):
        raise ValueError("array export failed in the producer")


class RaisingLookup:
    """Attribute lookup fails with an error other than AttributeError."""

    def __getattr__(self, name):
        raise RuntimeError(f"lookup of {name} failed")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_failed_export_says_why_and_writes_nothing(fmt, tmp_path):
    schema_capsule = pa.schema([("a", pa.int32())]).__arrow_c_schema__()
    cases = [
        (BrokenExport(ValueError("export failed in the producer")), ValueError, "in the producer"),
        (BrokenExport(schema_capsule), ValueError, "arrow_array_stream"),
        (BrokenExport(42), TypeError, "PyCapsule"),
    ]
    for obj, cause_type, cause_text in cases:
        path = tmp_path / f"out.{fmt}"
        with pytest.raises(TypeError, match="cannot write 'BrokenExport'") as info:
            write_one(fmt, obj, path)
        assert isinstance(info.value.__cause__, cause_type), info.value.__cause__
        assert cause_text in str(info.value.__cause__)
        assert list(tmp_path.iterdir()) == []
    # Streams of something other than record batches cannot be written either.
    for obj in (pa.chunked_array([[1, 2], [3]]), pl.Series("a", [1, 2])):
        path = tmp_path / f"out.{fmt}"
        with pytest.raises(TypeError, match="cannot write") as info:
            write_one(fmt, obj, path)
        assert isinstance(info.value.__cause__, ValueError), info.value.__cause__
        assert list(tmp_path.iterdir()) == []
        with new_writer(fmt, io.BytesIO(), INPUT_TABLE.schema) as w:
            with pytest.raises(TypeError, match="cannot write"):
                w.write(obj)
            w.write(INPUT_TABLE)  # still usable
    with pytest.raises(TypeError, match="cannot write 'BrokenArrayExport'") as info:
        write_one(fmt, BrokenArrayExport())
    assert "array export failed" in str(info.value.__cause__)
    # An error raised while looking the interface up is the error reported.
    with pytest.raises(RuntimeError, match="lookup of __arrow_c_array__ failed"):
        write_one(fmt, RaisingLookup())
    # An object without the interface gets no cause: there is nothing more to say.
    with pytest.raises(TypeError, match="cannot write 'object'") as info:
        write_one(fmt, object())
    assert info.value.__cause__ is None


def test_reader_that_fails_midway():
    t = INPUT_TABLE
    batches = t.to_batches(max_chunksize=10)[:2]
    # One shot: nothing is returned.
    with pytest.raises(IpcError, match="boom from the generator"):
        zi.write_stream(failing_reader(t.schema, batches, ValueError("boom from the generator")))
    # Through a writer: the batches before the error were written, the writer goes on.
    sink = io.BytesIO()
    w = zi.new_stream(sink, t.schema)
    with pytest.raises(IpcError, match="boom from the generator"):
        w.write(failing_reader(t.schema, batches, ValueError("boom from the generator")))
    assert not w.closed
    assert w.num_batches == 2
    w.write(t)
    w.close()
    assert_tables_equal(
        pa_read("stream", sink.getvalue()), pa.concat_tables([pa.Table.from_batches(batches), t])
    )
