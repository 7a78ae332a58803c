"""The .pyi stubs must describe the compiled module exactly, and every public name has help()."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import zstdpool
import zstdpool._zstdpool
import zstdpool.errors
import zstdpool.ipc

from tests.helpers.env import subprocess_env


def test_stubtest_finds_no_difference(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    config = tmp_path / "mypy.ini"
    # pyarrow ships no type information; the stubs only name its types.
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "zstdpool._zstdpool",
            "--mypy-config-file",
            str(config),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=600,
    )
    assert result.returncode == 0, textwrap.shorten(result.stdout + result.stderr, 4000)


def _public(module: object) -> list[tuple[str, object]]:
    """The public callables zstdpool defines (not those it offers from pyarrow as they are)."""
    names = getattr(module, "__all__", [])
    return [
        (n, obj)
        for n in names
        if callable(obj := getattr(module, n))
        and getattr(obj, "__module__", "").split(".")[0] == "zstdpool"
    ]


@pytest.mark.parametrize(
    ("name", "obj"),
    _public(zstdpool) + _public(zstdpool.ipc) + _public(zstdpool.errors),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_public_name_has_a_docstring(name: str, obj: object) -> None:
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 20, f"{name} has no docstring"
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not (callable(member) or inspect.isgetsetdescriptor(member)):
                continue
            assert inspect.getdoc(member), f"{name}.{attr} has no docstring"


STUB = Path(zstdpool.__file__).with_name("_zstdpool.pyi")


def _typed_dicts() -> dict[str, dict[str, ast.expr]]:
    """Each TypedDict of the stub: its keys and their annotations."""
    found = {}
    for node in ast.parse(STUB.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and any(
            isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases
        ):
            found[node.name] = {
                item.target.id: item.annotation
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return found


TYPED_DICTS = _typed_dicts()
SCALARS = {"int": int, "bool": bool, "str": str, "bytes": bytes, "None": type(None)}


def _problems(value: object, annotation: ast.expr, where: str) -> list[str]:
    """How ``value`` fails to be what ``annotation`` (a stub annotation) says; [] if it is."""
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return [] if value is None else [f"{where}: {value!r} is not None"]
    if isinstance(annotation, ast.Name) and annotation.id in SCALARS:
        want = SCALARS[annotation.id]
        ok = type(value) is want  # a bool is not an int here, nor the other way round
        return [] if ok else [f"{where}: {value!r} is not {annotation.id}"]
    if isinstance(annotation, ast.Name) and annotation.id in TYPED_DICTS:
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not a dict"]
        fields = TYPED_DICTS[annotation.id]
        if set(value) != set(fields):
            return [
                f"{where}: keys only at runtime {sorted(set(value) - set(fields))}, only in "
                f"the stub's {annotation.id} {sorted(set(fields) - set(value))}"
            ]
        return [p for k, v in value.items() for p in _problems(v, fields[k], f"{where}[{k!r}]")]
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        left = _problems(value, annotation.left, where)
        right = _problems(value, annotation.right, where)
        return [] if not left or not right else left + right
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        if annotation.value.id == "Literal":
            elts = (
                annotation.slice.elts
                if isinstance(annotation.slice, ast.Tuple)
                else [annotation.slice]
            )
            allowed = [e.value for e in elts if isinstance(e, ast.Constant)]
            return [] if value in allowed else [f"{where}: {value!r} is not one of {allowed}"]
        if annotation.value.id == "dict" and isinstance(annotation.slice, ast.Tuple):
            if not isinstance(value, dict):
                return [f"{where}: {value!r} is not a dict"]
            key, item = annotation.slice.elts
            return [
                p
                for k, v in value.items()
                for p in _problems(k, key, f"{where} key") + _problems(v, item, f"{where}[{k!r}]")
            ]
        if annotation.value.id == "list":
            if not isinstance(value, list):
                return [f"{where}: {value!r} is not a list"]
            return [
                p
                for i, v in enumerate(value)
                for p in _problems(v, annotation.slice, f"{where}[{i}]")
            ]
    if ast.unparse(annotation) == "pa.Schema":
        return [] if isinstance(value, pa.Schema) else [f"{where}: {value!r} is not a Schema"]
    return [f"{where}: the test cannot check the annotation {ast.unparse(annotation)}"]


def _pool_with_both_kinds() -> zstdpool.ContextPool:
    pool = zstdpool.ContextPool()
    frame = zstdpool.compress(b"stubs " * 100, 5, checksum=True, pool=pool)
    zstdpool.decompress(frame, pool=pool)
    kinds = {k["kind"] for k in pool.stats()["per_key"]}
    assert kinds == {"compress", "decompress"}, kinds
    return pool


def _parquet_metadata() -> object:
    import zstdpool.parquet

    table = pa.table({"n": [1, 2, 3], "s": [{"a": 1}, None, {"a": 2}]})
    return zstdpool.parquet.ParquetFile(zstdpool.parquet.write_table(table)).metadata


def _written_file() -> object:
    import tempfile

    import zstdpool.dataset

    with tempfile.TemporaryDirectory() as d:
        return zstdpool.dataset.write_dataset(
            pa.table({"k": [1, 2], "v": [3, 4]}), d, partitioning=["k"], partitioning_flavor="hive"
        )[0]


def _inspected() -> object:
    table = pa.table({"n": [1, 2, 3], "s": pa.array(["a", "b", "a"]).dictionary_encode()})
    return zstdpool._zstdpool.inspect_ipc(zstdpool.ipc.write_file(table))


@pytest.mark.parametrize(
    ("typed_dict", "make"),
    [
        ("PoolStats", lambda: _pool_with_both_kinds().stats()),
        ("PoolStats", zstdpool.pool_stats),
        ("MemoryStats", zstdpool.memory_stats),
        ("IpcInspection", _inspected),
        ("ParquetMetadata", _parquet_metadata),
        ("WrittenFile", _written_file),
    ],
    ids=[
        "ContextPool.stats",
        "pool_stats",
        "memory_stats",
        "inspect_ipc",
        "ParquetFile.metadata",
        "write_dataset",
    ],
)
def test_typed_dicts_have_the_runtime_keys_and_types(typed_dict: str, make: object) -> None:
    """The TypedDicts of the stub name exactly the keys the module returns (their nested ones
    too), with the value types it returns: a key added on the Rust side fails here until the
    stub has it."""
    value = make()  # type: ignore[operator]
    annotation = ast.Name(typed_dict)
    assert not _problems(value, annotation, typed_dict)


def test_every_typed_dict_is_checked() -> None:
    """Every TypedDict of the stub is reached by the test above, nested ones included."""
    assert set(TYPED_DICTS) == {
        "PoolStats",
        "CompressKeyStats",
        "DecompressKeyStats",
        "MemoryStats",
        "IpcInspection",
        "ColumnBytes",
        "ParquetMetadata",
        "ParquetRowGroup",
        "ParquetColumnChunk",
        "WrittenFile",
        "ParquetWriteOptions",  # checked by the test below
    }


def test_parquet_write_options_are_the_keywords_the_writers_take(tmp_path: Path) -> None:
    """``ParquetWriteOptions`` names every keyword pyarrow's ``write_table`` and
    ``ParquetWriter`` take, and each is taken by both of zstdpool's (None is each one's
    default); a keyword it does not name is refused with pyarrow's TypeError."""

    import pyarrow.parquet as pq

    stub = set(TYPED_DICTS["ParquetWriteOptions"])
    theirs = {
        name
        for f in (pq.write_table, pq.ParquetWriter.__init__)
        for name, p in inspect.signature(f).parameters.items()
        if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD
    } - {"self", "table", "where", "schema"}
    assert theirs <= stub, sorted(theirs - stub)
    table = pa.table({"n": [1, 2, 3]})
    for name in sorted(stub):
        zstdpool.parquet.write_table(table, **{name: None})
        zstdpool.parquet.ParquetWriter(
            tmp_path / f"{name}.parquet", table.schema, **{name: None}
        ).close()
    with pytest.raises(
        TypeError, match="write_table\\(\\) got an unexpected keyword argument 'level'"
    ):
        zstdpool.parquet.write_table(table, level=3)
    with pytest.raises(
        TypeError, match="ParquetWriter\\(\\) got an unexpected keyword argument 'x'"
    ):
        zstdpool.parquet.ParquetWriter(tmp_path / "x.parquet", table.schema, x=1)


USES = """
from __future__ import annotations

import polars as pl
import zstdpool
import zstdpool.ipc

df = pl.DataFrame({"a": [1, 2]})
zstdpool.ipc.write_stream(df)
zstdpool.ipc.write_stream(df, compression="lz4_frame")
zstdpool.ipc.write_file(df, "out.arrow", compression=None)
with zstdpool.ipc.open_stream(b"") as reader:
    pl.from_arrow(reader)
    zstdpool.ipc.write_stream(reader)
idle: int = zstdpool.pool_stats()["idle_bytes"]
counting: bool = zstdpool.memory_stats()["counting"]
kinds = [k["kind"] for k in zstdpool.default_pool().stats()["per_key"]]
stored: int = zstdpool._zstdpool.inspect_ipc(b"")["columns"][0]["compressed_bytes"]
zstdpool.ipc.write_stream(object())  # E: arg-type
zstdpool.ipc.write_stream(df, compression="gzip")  # E: arg-type
zstdpool.ipc.new_stream("out.arrow", df)  # E: arg-type
zstdpool.pool_stats()["no_such_key"]  # E: typeddict-item
"""


def _mypy_path() -> dict[str, str]:
    """Where mypy finds the package: an installed wheel is found in site-packages through
    its py.typed (mypy refuses site-packages on MYPYPATH); a source checkout is named."""
    root = STUB.parents[1]
    if root.name in ("site-packages", "dist-packages"):
        return {}
    return {"MYPYPATH": str(root)}


def test_the_stubs_take_arrow_objects_and_refuse_others(tmp_path: Path) -> None:
    """Under mypy --strict the stubs take what the module takes (a polars DataFrame, a
    reader, the codec names) and refuse what it refuses; the dicts have typed keys."""
    pytest.importorskip("mypy")
    pytest.importorskip("polars")
    (tmp_path / "uses.py").write_text(USES)
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nstrict = True\n[mypy-pyarrow.*]\nignore_missing_imports = True\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "uses.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**_mypy_path()),
        timeout=600,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    found = {}
    for line in result.stdout.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[0] == "uses.py" and " error: " in f":{parts[2]}:{parts[3]}":
            code = line.rsplit("[", 1)[-1].rstrip("]")
            found.setdefault(int(parts[1]), []).append(code)
    expected = {
        number: [line.split("# E: ")[1]]
        for number, line in enumerate(USES.splitlines(), start=1)
        if "# E: " in line
    }
    assert found == expected, result.stdout


def _stub_keywords() -> object:
    """``scripts/stub_keywords.py``, imported as a module."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "stub_keywords.py"
    spec = importlib.util.spec_from_file_location("stub_keywords", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stubs_shared_keywords_are_written_from_one_table() -> None:
    # Every definition whose runtime signature ends with shared keywords has them, typed as
    # the table types them (run the script without --check to write them).
    keywords: Any = _stub_keywords()
    # The stub installed beside the module (the tree's, in a development install).
    _, changed = keywords.update(STUB.read_text(encoding="utf-8"), zstdpool._zstdpool)
    assert changed == []
    readers = [
        zstdpool._zstdpool.read_stream,
        zstdpool._zstdpool.RecordBatchFileReader,
        zstdpool._zstdpool.ParquetFile,
        zstdpool._zstdpool.DatasetScanner,
    ]
    for reader in readers:
        assert keywords.runtime_tail(reader) == ["pool", "filesystem", "storage_options"], reader
    assert keywords.runtime_tail(zstdpool._zstdpool.inspect_ipc) == [
        "filesystem",
        "storage_options",
    ]
    writers = [
        zstdpool._zstdpool.write_stream,
        zstdpool._zstdpool.RecordBatchFileWriter,
        zstdpool._zstdpool.write_dataset,
    ]
    for writer in writers:
        assert keywords.runtime_tail(writer) == [
            "fsync",
            "pool",
            "filesystem",
            "storage_options",
        ], writer


def test_the_stub_keyword_writer_adds_a_missing_keyword_and_mends_a_type() -> None:
    keywords: Any = _stub_keywords()
    stub = textwrap.dedent(
        """\
        class DatasetScanner:
            def __new__(
                cls,
                source: str,
                *,
                format: str = "parquet",
                storage_options: dict[str, Any] = None,
                pool: ContextPool | None = None,
            ) -> DatasetScanner: ...
            def files(self) -> list[str]: ...

        def read_stream(source: object) -> pa.Table:
            \"\"\"Reads.\"\"\"
        """
    )
    text, changed = keywords.update(stub, zstdpool._zstdpool)
    assert [c.split()[-1] for c in changed] == ["__new__", "read_stream"]
    scanner = ast.parse(text).body[0]
    assert isinstance(scanner, ast.ClassDef)
    new = scanner.body[0]
    assert isinstance(new, ast.FunctionDef)
    assert [a.arg for a in new.args.kwonlyargs][-4:] == [
        "format",
        "pool",
        "filesystem",
        "storage_options",
    ]
    mended = {a.arg: a.annotation for a in new.args.kwonlyargs}["storage_options"]
    assert mended is not None and ast.unparse(mended) == "dict[str, Any] | None"
    assert "def files(self) -> list[str]: ..." in text
    read = ast.parse(text).body[1]
    assert isinstance(read, ast.FunctionDef)
    assert ast.get_docstring(read) == "Reads."
    assert [a.arg for a in read.args.kwonlyargs] == ["pool", "filesystem", "storage_options"]
    assert keywords.update(text, zstdpool._zstdpool)[1] == []


def test_the_stub_keyword_writer_keeps_what_it_does_not_rewrite_and_refuses_what_it_cannot() -> (
    None
):
    keywords: Any = _stub_keywords()
    # A comment after the header, text that is not ASCII before the body on the header's line,
    # and an __init__: rewritten, with the rest kept as it was.
    stub = textwrap.dedent(
        """\
        def read_stream(source: Literal["é"]) -> pa.Table:  # the reader
            \"\"\"Reads.\"\"\"
        class DatasetScanner:
            def __init__(self, source: str, *, format: str = "é") -> None: ...
        """
    )
    text, changed = keywords.update(stub, zstdpool._zstdpool)
    assert [c.split()[-1] for c in changed] == ["read_stream", "__init__"]
    tree = ast.parse(text)
    read = tree.body[0]
    assert isinstance(read, ast.FunctionDef)
    assert ast.unparse(read.args.args[0].annotation or read) == "Literal['é']"
    assert [a.arg for a in read.args.kwonlyargs] == ["pool", "filesystem", "storage_options"]
    assert "# the reader" in text
    assert keywords.update(text, zstdpool._zstdpool)[1] == []
    # A comment inside a signature it would rewrite, and a shared keyword the stub takes
    # positionally: refused, naming the definition, rather than written wrong.
    commented = "def read_stream(\n    source: object,  # bytes too\n) -> pa.Table: ...\n"
    with pytest.raises(ValueError, match="read_stream: a comment inside the signature"):
        keywords.update(commented, zstdpool._zstdpool)
    positional = "def read_stream(source: object, pool: object) -> pa.Table: ...\n"
    with pytest.raises(ValueError, match=r"read_stream: the stub takes \['pool'\] positionally"):
        keywords.update(positional, zstdpool._zstdpool)
