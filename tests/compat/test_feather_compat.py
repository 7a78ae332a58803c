"""Code written for ``pyarrow.feather`` (and pandas's ``to_feather`` / ``read_feather``) runs
on ``zstdpool.feather`` unchanged: each test runs against both modules (the ``feather``
fixture); the deliberate differences have tests of their own."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather
import pytest
import zstdpool
import zstdpool.feather

from tests.helpers.ipc_writer import leased
from tests.helpers.peers import np, pd

FRAME = pd.DataFrame(
    {
        "i": np.arange(50_000, dtype=np.int64),
        "f": np.linspace(0, 1, 50_000),
        "s": [f"name {i % 97}" for i in range(50_000)],
        "c": pd.Categorical([("x", "y", "z")[i % 3] for i in range(50_000)]),
        "t": pd.date_range("2026-01-01", periods=50_000, freq="s", tz="Europe/Paris"),
    },
    index=pd.RangeIndex(10, 50_010),
)


@pytest.fixture(params=["pyarrow", "zstdpool"])
def feather(request: pytest.FixtureRequest) -> Any:
    return pyarrow.feather if request.param == "pyarrow" else zstdpool.feather


@pytest.mark.parametrize("compression", ["zstd", "lz4", "uncompressed"])
def test_pandas_round_trip_read_by_both(feather: Any, compression: str, tmp_path: Path) -> None:
    path = tmp_path / "frame.feather"
    feather.write_feather(FRAME, path, compression=compression)
    for reader in (pyarrow.feather, zstdpool.feather):
        pd.testing.assert_frame_equal(reader.read_feather(path), FRAME)
    pd.testing.assert_frame_equal(pd.read_feather(path), FRAME)
    # An independent reader: polars (its own IPC reader and decompression).
    pl = pytest.importorskip("polars")
    frame = pl.read_ipc(path)
    assert frame["i"].to_list() == FRAME["i"].tolist()
    assert frame["s"].to_list() == FRAME["s"].tolist()


def test_a_non_default_index_comes_back(feather: Any, tmp_path: Path) -> None:
    frame = FRAME.head(100).set_index("s")
    feather.write_feather(frame, tmp_path / "f.feather")
    pd.testing.assert_frame_equal(feather.read_feather(tmp_path / "f.feather"), frame)


def test_columns_by_name_and_index_in_the_order_asked(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "f.feather"
    pyarrow.feather.write_feather(FRAME, path)
    by_name = feather.read_table(path, columns=["t", "i"])
    assert by_name.column_names == ["t", "i"]
    assert by_name.equals(pyarrow.feather.read_table(path, columns=["t", "i"]))
    assert feather.read_table(path, columns=[2]).column_names == ["s"]
    frame = feather.read_feather(path, columns=["f", "c"])
    pd.testing.assert_frame_equal(frame, FRAME[["f", "c"]])


def test_columns_by_index_where_names_repeat(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "f.feather"
    table = pa.table([[1, 2], [3, 4], ["a", "b"]], names=["x", "x", "s"])
    pyarrow.feather.write_feather(table, path)
    got = feather.read_table(path, columns=[1, 2, 0])
    assert got.column_names == ["x", "s", "x"]
    assert got.column(0).to_pylist() == [3, 4] and got.column(2).to_pylist() == [1, 2]
    # A repeated name selects nothing: it is refused (pyarrow: "Field named x is not found").
    with pytest.raises(ValueError):
        feather.read_table(path, columns=["x"])
    assert feather.read_table(path, columns=["s"]).column_names == ["s"]


def test_columns_must_be_a_sequence(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "f.feather"
    pyarrow.feather.write_feather(FRAME.head(10), path)
    with pytest.raises(TypeError):
        feather.read_table(path, columns=(c for c in ["i"]))
    assert feather.read_table(path, columns=("i",)).column_names == ["i"]


def test_lz4_takes_a_level_as_pyarrow_does(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "f.feather"
    feather.write_feather(FRAME, path, compression="lz4", compression_level=9)
    pd.testing.assert_frame_equal(pyarrow.feather.read_feather(path), FRAME)
    assert pa.ipc.open_file(path).schema.equals(pa.Table.from_pandas(FRAME).schema)


def test_chunksize_and_level(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "f.feather"
    feather.write_feather(FRAME, path, compression="zstd", compression_level=9, chunksize=12_500)
    reader = pa.ipc.open_file(path)
    assert reader.num_record_batches == 4
    assert reader.read_all().equals(pa.Table.from_pandas(FRAME, preserve_index=None))


def test_tables_file_objects_and_threads(feather: Any) -> None:
    table = pa.Table.from_pandas(FRAME.head(1000), preserve_index=False)
    sink = io.BytesIO()
    feather.write_feather(table, sink, compression="zstd")
    data = sink.getvalue()
    assert feather.read_table(io.BytesIO(data), use_threads=False).equals(table)
    assert feather.read_table(pa.BufferReader(data)).equals(table)
    assert feather.read_table(pa.py_buffer(data), memory_map=False).equals(table)


def test_memory_map(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "f.feather"
    feather.write_feather(FRAME.head(5000), path)
    pd.testing.assert_frame_equal(feather.read_feather(path, memory_map=True), FRAME.head(5000))


def test_not_feather_is_arrow_invalid(feather: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad.feather"
    path.write_bytes(b"this is not a feather file at all")
    with pytest.raises(pa.ArrowInvalid):
        feather.read_table(path)


def test_zstd_is_zstdpools_default_and_lz4_pyarrows(tmp_path: Path) -> None:
    """The deliberate difference: the default codec."""
    for module, codec in ((zstdpool.feather, "zstd"), (pyarrow.feather, "lz4")):
        path = tmp_path / f"{codec}.feather"
        module.write_feather(FRAME.head(1000), path)
        assert zstdpool._zstdpool.inspect_ipc(str(path))["codecs"] == [codec]
    zstdpool.feather.write_feather(FRAME.head(10), tmp_path / "none.feather", compression=None)
    assert zstdpool._zstdpool.inspect_ipc(str(tmp_path / "none.feather"))["codecs"] == ["none"]
    assert leased() == 0


def test_version_1_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(zstdpool.ParameterError, match="version 2 only"):
        zstdpool.feather.write_feather(FRAME.head(10), tmp_path / "v1.feather", version=1)
    assert not (tmp_path / "v1.feather").exists()
    with pytest.warns(DeprecationWarning):
        pyarrow.feather.write_feather(FRAME.head(10), tmp_path / "v1.feather", version=1)
    with pytest.raises(zstdpool.IpcError, match="Feather version 1"):
        zstdpool.feather.read_table(tmp_path / "v1.feather")


def test_bad_columns_are_named() -> None:
    data = io.BytesIO()
    zstdpool.feather.write_feather(FRAME.head(10), data)
    with pytest.raises(KeyError, match="no column 'nope'"):
        zstdpool.feather.read_table(io.BytesIO(data.getvalue()), columns=["nope"])
    with pytest.raises(IndexError, match="out of range"):
        zstdpool.feather.read_table(io.BytesIO(data.getvalue()), columns=[9])
