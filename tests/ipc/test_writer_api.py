"""The writer objects: their properties and counters, the context manager, the file footer's
metadata, and one-shot writes that equal a writer's.
"""

from __future__ import annotations

import io

import pyarrow as pa
import zstdpool.ipc as zi
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.arrow_data import chunked, typed_table
from tests.helpers.ipc_writer import (
    FORMATS,
    INPUT_TABLE,
    assert_tables_equal,
    new_writer,
    pa_batches,
    pa_read,
    quick,
    sliceable_table,
    write_one,
)

metadata_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)


@quick
@given(metadata=st.dictionaries(metadata_text, metadata_text, max_size=5))
def test_footer_metadata(metadata):
    out = zi.write_file(INPUT_TABLE.slice(0, 5), metadata=metadata)
    reader = pa.ipc.open_file(out)
    got = {k.decode(): v.decode() for k, v in (reader.metadata or {}).items()}
    assert got == metadata
    with zi.open_file(out) as ours:
        assert ours.metadata == reader.metadata
        assert ours.metadata == ({k.encode(): v.encode() for k, v in metadata.items()} or None)
    # Footer metadata is not schema metadata.
    assert reader.schema.metadata is None


def test_footer_metadata_through_a_writer(tmp_path):
    path = tmp_path / "meta.arrow"
    with zi.new_file(path, INPUT_TABLE.schema, metadata={"k": "v", "ключ": "значение"}) as w:
        w.write(INPUT_TABLE)
    assert pa.ipc.open_file(str(path)).metadata == {
        b"k": b"v",
        "ключ".encode(): "значение".encode(),
    }
    assert_tables_equal(pa_read("file", str(path)), INPUT_TABLE)


WRITER_OPTIONS = [("zstd", None), ("zstd", 7), ("zstd", -3), ("lz4", None), (None, None)]


def test_writer_properties(subtests):
    for fmt in FORMATS:
        for codec, level in WRITER_OPTIONS:
            with subtests.test(fmt=fmt, codec=codec, level=level):
                check_writer_properties(fmt, codec, level)


def check_writer_properties(fmt, codec, level):
    schema = INPUT_TABLE.schema.with_metadata({"m": "1"})
    sink = io.BytesIO()
    w = new_writer(fmt, sink, schema, compression=codec, level=level)
    assert w.schema.equals(schema, check_metadata=True)
    assert w.format == fmt
    assert w.compression == codec
    assert w.level == (None if codec != "zstd" else (1 if level is None else level))
    assert not w.closed
    assert w.num_batches == 0
    assert w.bytes_written == len(sink.getvalue())
    r = repr(w)
    name = "RecordBatchStreamWriter" if fmt == "stream" else "RecordBatchFileWriter"
    assert r.startswith(f"<zstdpool.ipc.{name}") and isinstance(w, zi.IpcWriter)
    assert (codec or "none") in r and "closed" not in r
    for k, batch in enumerate(INPUT_TABLE.to_batches(max_chunksize=20), start=1):
        w.write(batch)
        assert w.num_batches == k
        assert w.bytes_written == len(sink.getvalue())
    w.close()
    assert w.closed and "closed" in repr(w)
    assert pa_read(fmt, sink.getvalue()).num_rows == INPUT_TABLE.num_rows


def test_one_shot_and_writer_give_the_same_bytes(tmp_path):
    table = chunked(sliceable_table(40, 3), 15)
    for fmt in FORMATS:
        kwargs = {"metadata": {"k": "v"}} if fmt == "file" else {}
        one_shot = write_one(fmt, table, **kwargs)
        sink = io.BytesIO()
        with new_writer(fmt, sink, table.schema, **kwargs) as w:
            for batch in table.to_batches():
                w.write(batch)
        assert sink.getvalue() == one_shot
        path = tmp_path / f"same.{fmt}"
        write_one(fmt, table, path, **kwargs)
        assert path.read_bytes() == one_shot


def test_writer_closed_without_batches_writes_a_valid_empty_output(tmp_path):
    schema = typed_table(0).schema  # dictionaries, extensions, metadata
    for fmt in FORMATS:
        sink = io.BytesIO()
        w = new_writer(fmt, sink, schema, **({"metadata": {"k": "v"}} if fmt == "file" else {}))
        w.close()
        assert w.closed
        for source in (sink.getvalue(), pa.BufferReader(sink.getvalue())):
            got = pa_read(fmt, source)
            assert got.num_rows == 0
            assert got.schema.equals(schema, check_metadata=True)
        assert pa_batches(fmt, sink.getvalue()) == []
        if fmt == "file":
            assert pa.ipc.open_file(sink.getvalue()).metadata == {b"k": b"v"}
        path = tmp_path / f"empty.{fmt}"
        with new_writer(fmt, path, schema):
            pass
        assert pa_read(fmt, str(path)).schema.equals(schema, check_metadata=True)


def test_writer_is_its_own_context_manager():
    sink = io.BytesIO()
    w = zi.new_stream(sink, INPUT_TABLE.schema)
    with w as entered:
        assert entered is w
        entered.write(INPUT_TABLE)
    assert w.closed


def test_counters_survive_close():
    for fmt in FORMATS:
        sink = io.BytesIO()
        w = new_writer(fmt, sink, INPUT_TABLE.schema)
        w.write(INPUT_TABLE)
        w.write(INPUT_TABLE)
        w.close()
        assert w.num_batches == 2
        assert w.bytes_written == len(sink.getvalue())
