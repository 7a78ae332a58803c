"""zstdpool.polars: scan_dataset read by zstdpool with polars' projection, predicate, n_rows
and batch_size pushed down, equal to polars' own scan_parquet of the same files; and
write_dataset streaming a LazyFrame into zstdpool's writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pl = pytest.importorskip("polars")

import zstdpool.dataset as zd  # noqa: E402
import zstdpool.polars as zpl  # noqa: E402

N = 3000


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("polars")
    table = pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "k": pa.array([i % 7 for i in range(N)], pa.int32()),
            "s": [None if i % 11 == 0 else f"s{i % 13}" for i in range(N)],
            "x": [float("nan") if i % 17 == 0 else i / 3 for i in range(N)],
            "b": [i % 3 == 0 for i in range(N)],
        }
    )
    zd.write_dataset(
        table, d, partitioning=["k"], partitioning_flavor="hive", max_rows_per_group=200
    )
    return d


def theirs(hive: Path) -> Any:
    return pl.scan_parquet(hive / "**/*.parquet", hive_partitioning=True)


def same(a: Any, b: Any) -> None:
    a, b = a.sort("id"), b.sort("id")
    assert a.columns == b.columns
    assert a.cast(b.schema).equals(b), (a, b)


PREDICATES = [
    lambda: pl.col("k") == 3,
    lambda: (pl.col("id") > 1000) & (pl.col("k") != 2),
    lambda: (pl.col("s") == "s4") | (pl.col("id") < 10),
    lambda: pl.col("s").is_null(),
    lambda: pl.col("s").is_not_null() & (pl.col("b") == True),  # noqa: E712
    lambda: 2000 <= pl.col("id"),
    lambda: pl.col("x") > 100,  # NaN: polars orders it above every number
    lambda: pl.col("s").is_in(["s1", "s2"]),  # not translated: polars filters alone
    lambda: pl.col("id") % 5 == 0,  # not translated
    lambda: ~(pl.col("k") == 1),
]


@pytest.mark.parametrize("predicate", PREDICATES, ids=range(len(PREDICATES)))
def test_a_filtered_projection_equals_scan_parquet(hive: Path, predicate: Any) -> None:
    query = lambda lf: lf.filter(predicate()).select("id", "s", "k")  # noqa: E731
    same(query(zpl.scan_dataset(hive)).collect(), query(theirs(hive)).collect())


def test_the_whole_dataset_and_head(hive: Path) -> None:
    ours = zpl.scan_dataset(hive)
    same(ours.collect(), theirs(hive).select(ours.collect_schema().names()).collect())
    assert ours.head(17).collect().height == 17
    assert ours.filter(pl.col("k") == 1).head(5).collect()["k"].to_list() == [1] * 5
    assert ours.select(pl.len()).collect().item() == N


def test_translation_keeps_at_least_what_polars_keeps(hive: Path) -> None:
    schema = zd.dataset(hive).schema
    assert zpl.translate(pl.col("x") > 1, schema) is None  # a float column is left to polars
    assert zpl.translate(pl.col("id") % 2 == 0, schema) is None
    both = zpl.translate((pl.col("id") > 5) & (pl.col("id") % 2 == 0), schema)
    assert str(both) == "(id > 5)"
    assert zpl.translate((pl.col("id") > 5) | (pl.col("id") % 2 == 0), schema) is None


def test_projection_and_predicate_reach_the_reader(
    hive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    real = zd.Dataset.to_batches

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zd.Dataset, "to_batches", spy)
    frame = zpl.scan_dataset(hive).filter(pl.col("k") == 3).select("id").collect()
    assert frame.height == len([i for i in range(N) if i % 7 == 3])
    [call] = seen
    assert call["columns"] == ["id", "k"]
    assert str(call["filter"]) == "(k == 3)"


def test_write_dataset_streams_a_lazyframe(tmp_path: Path) -> None:
    lf = pl.LazyFrame({"id": range(1000), "k": [i % 4 for i in range(1000)]}).with_columns(
        s=pl.format("v{}", pl.col("id"))
    )
    written = zpl.write_dataset(
        lf, tmp_path / "out", partitioning=["k"], partitioning_flavor="hive", chunk_size=100
    )
    assert len(written) == 4
    back = zpl.scan_dataset(tmp_path / "out").collect()
    same(back.select("id", "s", "k"), lf.collect().select("id", "s", "k"))
    # Read back by polars' own reader too.
    theirs = pl.scan_parquet(tmp_path / "out" / "**/*.parquet", hive_partitioning=True)
    same(theirs.collect().select("id", "s", "k"), lf.collect().select("id", "s", "k"))
    written = zpl.write_dataset(lf.collect(), tmp_path / "frame")
    assert zd.dataset(tmp_path / "frame").count_rows() == 1000
    with pytest.raises(TypeError, match="LazyFrame or DataFrame"):
        zpl.write_dataset([1, 2], tmp_path / "bad")  # type: ignore[arg-type]


def test_a_file_that_fails_raises_through_polars_and_returns_every_lease(tmp_path: Path) -> None:
    import zstdpool

    pool = zstdpool.ContextPool()
    d = tmp_path / "bad"
    zd.write_dataset(
        pa.table({"id": range(100), "k": [i % 2 for i in range(100)]}),
        d,
        partitioning=["k"],
        partitioning_flavor="hive",
        compression="zstd",
        pool=pool,
    )
    # One file's last bytes (its footer) overwritten: the scan fails at that file.
    victim = sorted(d.rglob("*.parquet"))[-1]
    data = bytearray(victim.read_bytes())
    data[-12:-4] = b"\xff" * 8
    victim.write_bytes(bytes(data))
    with pytest.raises(Exception, match="(?i)parquet|footer|metadata"):
        zpl.scan_dataset(d, pool=pool).collect()
    stats = pool.stats()
    assert stats["leased"] == 0, stats


def test_a_lazyframe_that_fails_part_way_leaves_no_file(tmp_path: Path) -> None:
    def explode(batch: Any) -> Any:
        if batch["id"].max() >= 600:
            raise RuntimeError("the query fails part-way")
        return batch

    lf = pl.LazyFrame({"id": range(1000), "k": [i % 4 for i in range(1000)]}).map_batches(
        explode, streamable=True
    )
    with pytest.raises(Exception, match="the query fails part-way"):
        zpl.write_dataset(
            lf, tmp_path / "out", partitioning=["k"], partitioning_flavor="hive", chunk_size=100
        )
    left = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert left == [], left
