"""The exception classes: what each one also is, so that code written for pyarrow or for the
standard library catches zstdpool's errors, and that importing zstdpool for its codec alone
does not import pyarrow."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pyarrow as pa
import pytest
import zstdpool
import zstdpool.errors as errors
import zstdpool.ipc as ipc
import zstdpool.parquet as zp

from tests.helpers.env import subprocess_env

TABLE = pa.table({"a": pa.array(range(10_000))})


def _corrupt_first_frame(data: bytes) -> bytes:
    """`data` with the header of its first zstd frame overwritten."""
    out = bytearray(data)
    start = out.find(b"\x28\xb5\x2f\xfd")
    assert start >= 0
    out[start + 4 : start + 12] = b"\xff" * 8
    return bytes(out)


def _run_python(code: str) -> None:
    """Runs `code` in a fresh interpreter (where nothing is imported yet); fails on an error."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env()
    )
    assert result.returncode == 0, result.stderr


def test_importing_zstdpool_and_compressing_does_not_import_pyarrow() -> None:
    code = (
        "import sys, zstdpool\n"
        "assert zstdpool.decompress(zstdpool.compress(b'x' * 100)) == b'x' * 100\n"
        "assert 'pyarrow' not in sys.modules, 'pyarrow was imported'\n"
        "assert 'IpcError' in dir(zstdpool.errors)\n"
        "assert issubclass(zstdpool.IpcError, zstdpool.ZstdError)\n"
        "assert 'pyarrow' in sys.modules\n"
    )
    _run_python(code)


@pytest.mark.parametrize(
    ("name", "bases"),
    [
        ("IpcError", (errors.ZstdError, pa.ArrowInvalid, ValueError)),
        ("IpcDecompressionError", (errors.IpcError, errors.DecompressionError)),
        ("IpcOutputLimitError", (errors.IpcError, errors.OutputLimitError)),
        ("ParquetError", (errors.ZstdError, pa.ArrowInvalid, ValueError)),
        ("ParquetDecompressionError", (errors.ParquetError, errors.DecompressionError)),
        ("ParquetOutputLimitError", (errors.ParquetError, errors.OutputLimitError)),
    ],
)
def test_format_errors_are_arrow_invalid_and_the_codec_error(
    name: str, bases: tuple[type, ...]
) -> None:
    cls = getattr(errors, name)
    assert cls.__module__ == "zstdpool.errors" and cls.__qualname__ == name
    assert all(issubclass(cls, base) for base in bases), cls.__mro__
    assert issubclass(cls, pa.ArrowInvalid)
    # It pickles by name (a worker process raising it, a result sent back to a parent).
    err = cls("record batch 0: bad")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == "record batch 0: bad"


def test_the_codec_errors_stay_free_of_pyarrow() -> None:
    for cls in (errors.DecompressionError, errors.OutputLimitError, errors.ParameterError):
        assert not issubclass(cls, pa.ArrowException)


def test_the_classes_are_made_once_under_concurrent_first_use() -> None:
    code = (
        "import threading, zstdpool.errors as e\n"
        "got = []\n"
        "start = threading.Barrier(8)\n"
        "def use():\n"
        "    start.wait()\n"
        "    got.append((e.IpcError, e.ParquetOutputLimitError))\n"
        "threads = [threading.Thread(target=use) for _ in range(8)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "assert len(set(got)) == 1, got\n"
        "import zstdpool\n"
        "assert zstdpool.IpcError is e.IpcError\n"
    )
    _run_python(code)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchError"):
        errors.NoSuchError  # noqa: B018
    with pytest.raises(AttributeError, match="NoSuchError"):
        zstdpool.NoSuchError  # noqa: B018


@pytest.mark.parametrize("fmt", ["stream", "file"])
def test_a_corrupt_ipc_body_is_caught_as_pyarrow_would_catch_it(fmt: str) -> None:
    write, read = (
        (ipc.write_stream, ipc.read_stream) if fmt == "stream" else (ipc.write_file, ipc.read_file)
    )
    bad = _corrupt_first_frame(write(TABLE))
    with pytest.raises(pa.ArrowInvalid, match="record batch 0: buffer") as info:
        read(bad)
    assert type(info.value) is errors.IpcDecompressionError
    assert isinstance(info.value, zstdpool.DecompressionError)
    with pytest.raises(zstdpool.IpcError, match="truncated|not an Arrow IPC file"):
        read(b"not arrow at all")


def test_an_ipc_limit_is_an_ipc_output_limit_error() -> None:
    data = ipc.write_stream(TABLE)
    with pytest.raises(errors.IpcOutputLimitError, match="max_buffer_size") as info:
        ipc.read_stream(data, max_buffer_size=100)
    assert isinstance(info.value, pa.ArrowInvalid)
    assert isinstance(info.value, zstdpool.OutputLimitError)


def test_a_corrupt_parquet_page_is_caught_as_pyarrow_would_catch_it() -> None:
    bad = _corrupt_first_frame(zp.write_table(TABLE))
    with pytest.raises(pa.ArrowInvalid, match="row group 0, column 'a'") as info:
        zp.read_table(bad)
    assert type(info.value) is errors.ParquetDecompressionError
    assert isinstance(info.value, zstdpool.DecompressionError)
    with pytest.raises(errors.ParquetOutputLimitError, match="max_page_size"):
        zp.read_table(zp.write_table(TABLE), max_page_size=100)
    with pytest.raises(pa.ArrowInvalid):
        zp.read_table(b"PAR1 but not parquet PAR1")


def _parquet_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    zp.write_table(TABLE, sink)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("call", "cls", "message"),
    [
        (
            lambda: zstdpool.compress(b"x", 2**70),
            errors.ParameterError,
            "level is out of range: 1180",
        ),
        (lambda: zstdpool.compress(b"x", "3"), TypeError, "level must be an int, not str"),
        (
            lambda: zstdpool.compress(b"x", window_log=-(2**70)),
            errors.ParameterError,
            "window_log is out of range: -1180",
        ),
        (
            lambda: zstdpool.decompress(b"", max_output_size=2**80),
            errors.ParameterError,
            "max_output_size is out of range",
        ),
        (
            lambda: ipc.write_stream(TABLE, compression=5),
            TypeError,
            "compression must be a str or None, not int",
        ),
        (
            lambda: ipc.write_file(TABLE, compression=b"zstd"),
            TypeError,
            "compression must be a str or None, not bytes",
        ),
        (
            lambda: zp.read_table(_parquet_bytes(), row_groups=[0, -1]),
            errors.ParameterError,
            r"row_groups\[1\] must be 0 or more, not -1",
        ),
        (
            lambda: zp.read_table(_parquet_bytes(), row_groups="0"),
            TypeError,
            r"row_groups\[0\] must be an int, not str",
        ),
        (
            lambda: zp.ParquetFile(_parquet_bytes()).read_row_groups({0}),
            TypeError,
            "row_groups must be a sequence of ints, not set",
        ),
        (
            lambda: zp.ParquetFile(_parquet_bytes()).read_row_group(2**70),
            errors.ParameterError,
            "i is out of range",
        ),
        (
            lambda: zp.ParquetFile(_parquet_bytes(), max_page_size=-(2**70)),
            errors.ParameterError,
            "max_page_size is out of range",
        ),
        (
            lambda: ipc.open_stream(ipc.write_stream(TABLE), threads=2**64),
            errors.ParameterError,
            "threads is out of range",
        ),
        (
            lambda: zstdpool.ContextPool(max_idle_bytes=2**70),
            errors.ParameterError,
            "max_idle_bytes is out of range",
        ),
        # The Parquet writers' keywords arrive in **kwargs and are converted by the same
        # converters, with the same messages, down to a value inside a dict.
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), row_group_size=2**70),
            errors.ParameterError,
            "row_group_size is out of range",
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), data_page_version=2),
            TypeError,
            "data_page_version must be a str, not int",
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), store_schema=1),
            TypeError,
            "store_schema must be a bool, not int",
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), compression_level=1.5),
            TypeError,
            "compression_level must be an int, a dict of column names to ints or None, not float",
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), compression_level={"a": 2**70}),
            errors.ParameterError,
            'compression_level: the level of column "a" is out of range',
        ),
        (
            lambda: zp.write_table(
                TABLE, pa.BufferOutputStream(), bloom_filter_options={"a": {"fpp": "x"}}
            ),
            TypeError,
            'bloom_filter_options: the fpp of column "a" must be a float, not str',
        ),
    ],
)
def test_a_bad_argument_is_named_in_the_message(call, cls, message) -> None:
    # pyo3 puts the argument's name in an exception note only, which str() leaves out and
    # Python 3.10 drops: the message itself must say which argument was wrong.
    with pytest.raises(cls, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), compression="lzo"),
            'compression must be "zstd", "lz4", "snappy", "gzip", "brotli", "none" or None, '
            'not "lzo"',
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), data_page_version="3.0"),
            'data_page_version must be "1.0" or "2.0", not "3.0"',
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), version="2.5"),
            'version must be "1.0", "2.4" or "2.6", not "2.5"',
        ),
        (
            lambda: ipc.write_stream(TABLE, compression="lzo"),
            'compression must be "zstd", "lz4", "none" or None, not "lzo"',
        ),
        (
            lambda: zp.write_table(
                TABLE, pa.BufferOutputStream(), compression="gzip", compression_level=12
            ),
            "invalid gzip compression_level 12: it must be from 0 to 9",
        ),
        (
            lambda: zstdpool.compress(b"x", window_log=5),
            "invalid window_log 5: it must be from 10 to 30",
        ),
        (
            lambda: zstdpool.compress(b"x", window_log=31),
            "invalid window_log 31: it must be from 10 to 30",
        ),
        (
            lambda: zp.write_table(TABLE, pa.BufferOutputStream(), row_group_size=0),
            "row_group_size must be at least 1, not 0",
        ),
    ],
)
def test_an_option_out_of_its_choices_has_one_wording(call, message) -> None:
    # Every named option and range is checked by the bindings' one set of checks, which
    # list what is taken in the order the option's documentation gives it.
    with pytest.raises(errors.ParameterError) as raised:
        call()
    assert str(raised.value) == message


def test_the_parquet_writers_keywords_take_numpy_numbers_as_named_arguments_do() -> None:
    # numpy's integers are ints by __index__ and its floats floats by __float__, as a
    # named argument (`level=`) converts them: the keywords in **kwargs take them too.
    import numpy as np

    written = pa.BufferOutputStream()
    zp.write_table(
        TABLE,
        written,
        compression_level=np.int64(5),
        bloom_filter_options={"a": {"ndv": np.int32(100), "fpp": np.float32(0.05)}},
    )
    assert zp.read_table(written.getvalue()).equals(TABLE)
    with pytest.raises(TypeError, match="compression_level must be an int, a dict"):
        zp.write_table(TABLE, pa.BufferOutputStream(), compression_level=np.float64(5))


def test_write_dataset_names_its_text_arguments(tmp_path) -> None:
    import zstdpool.dataset as zd

    with pytest.raises(TypeError, match="existing_data_behavior must be a str, not int"):
        zd.write_dataset(TABLE, tmp_path / "d", format="parquet", existing_data_behavior=1)
    with pytest.raises(
        TypeError, match="format must be a str, a pyarrow FileFormat or None, not int"
    ):
        zd.write_dataset(TABLE, tmp_path / "d", format=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_open_files must be an int, not float"):
        zd.write_dataset(TABLE, tmp_path / "d", max_open_files=1.5)  # type: ignore[arg-type]
    with pytest.raises(errors.ParameterError, match="max_pending_bytes is out of range"):
        zd.write_dataset(TABLE, tmp_path / "d", max_pending_bytes=2**70)
    # None is pyarrow's default: Parquet, or the format of a dataset given as the data.
    assert zd.write_dataset(TABLE, tmp_path / "n", format=None)[0]["path"].endswith(".parquet")
