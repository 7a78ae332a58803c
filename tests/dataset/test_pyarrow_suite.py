"""pyarrow's own ``test_dataset.py`` (the file its wheel installs as
``pyarrow.tests.test_dataset``), run with the import changed: ``ds.dataset``,
``ds.write_dataset``, ``ds.Dataset`` and ``ds.Scanner`` are zstdpool's (see
``tests/helpers/pyarrow_dataset_swap.py``). Every test that passes on pyarrow passes here,
or is left out below with the reason: what zstdpool does not implement (docs/migrating.md lists it)
or does not do yet. A test left out that now passes fails this test too, so the list stays
true. The list is for the pyarrow major version below; with another, this is skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from tests.helpers.env import subprocess_env

#: The pyarrow major version whose test_dataset.py the list below was made against.
PYARROW_MAJOR = 26

_FORMATS = "CSV, JSON and ORC: zstdpool reads and writes Parquet and Arrow IPC/Feather only"
_FRAGMENTS = (
    "fragments (Dataset.get_fragments, ParquetFileFormat.make_fragment, their row groups and "
    "statistics): not implemented; zstdpool plans and prunes files itself"
)
_ACERO = "joins and sorts (Dataset.join, join_asof, sort_by) are Acero's: not implemented"
_MEMORY = (
    "in-memory and union datasets (dataset(Table), dataset([Dataset, ...]), "
    "Scanner.from_batches): not implemented; write_dataset takes tables, batches and "
    "readers directly"
)
_WRITE_OPTIONS = (
    "file_options as pyarrow's FileWriteOptions (make_write_options): they show none of "
    "their keywords, so zstdpool takes a dict of its write_table keywords instead"
)
_CLASSES = (
    "checks that a dataset or scanner is an instance of pyarrow's own classes "
    "(FileSystemDataset, pyarrow's Scanner), or builds them itself and hands them to "
    "zstdpool's"
)
_FS_URI = (
    "a path given as 'file:name' (no slashes) or absent from pyarrow's _MockFileSystem: "
    "FileNotFoundError, where pyarrow raises ArrowInvalid and TypeError"
)
_MESSAGES = "the error is raised, with zstdpool's message rather than pyarrow's wording"

#: Test functions left out: name and why.
LEFT_OUT: dict[str, str] = {
    **dict.fromkeys(
        [
            "test_column_names_encoding",
            "test_csv_format",
            "test_csv_format_compressed",
            "test_csv_format_options",
            "test_csv_format_options_generate_columns",
            "test_csv_fragment_options",
            "test_encoding",
            "test_json_format",
            "test_json_format_options",
            "test_json_fragment_options",
            "test_orc_format",
            "test_orc_scan_options",
            "test_orc_writer_not_implemented_for_dataset",
            "test_write_dataset_csv",
            "test_write_dataset_uses_csv_parse_delimiter",
        ],
        _FORMATS,
    ),
    **dict.fromkeys(
        [
            "test_dataset_partitioned_dictionary_type_reconstruct",
            "test_filter_mismatching_schema",
            "test_fragments",
            "test_fragments_implicit_cast",
            "test_fragments_parquet_ensure_metadata",
            "test_fragments_parquet_num_row_groups",
            "test_fragments_parquet_pickle_no_metadata",
            "test_fragments_parquet_row_groups",
            "test_fragments_parquet_row_groups_predicate",
            "test_fragments_parquet_row_groups_reconstruct",
            "test_fragments_parquet_subset_filter",
            "test_fragments_parquet_subset_ids",
            "test_fragments_parquet_subset_invalid",
            "test_fragments_parquet_subset_with_nested_fields",
            "test_fragments_reconstruct",
            "test_fragments_repr",
            "test_feather_format",
            "test_ipc_format",
            "test_parquet_empty_row_group_statistics",
            "test_parquet_fragment_statistics",
            "test_parquet_fragment_statistics_nulls",
        ],
        _FRAGMENTS,
    ),
    **dict.fromkeys(
        [
            "test_dataset_join",
            "test_dataset_join_asof",
            "test_dataset_join_asof_collisions",
            "test_dataset_join_asof_empty_by",
            "test_dataset_join_asof_multiple_by",
            "test_dataset_join_collisions",
            "test_dataset_join_unique_key",
            "test_dataset_sort_by",
        ],
        _ACERO,
    ),
    **dict.fromkeys(
        [
            "test_construct_from_mixed_child_datasets",
            "test_construct_in_memory",
            "test_dataset_union",
            "test_expression_arithmetic_operators",
            "test_open_union_dataset",
            "test_open_union_dataset_with_additional_kwargs",
            "test_scan_iterator",
            "test_union_dataset_filesystem_datasets",
            "test_union_dataset_filter",
            "test_union_dataset_from_other_datasets",
            "test_write_dataset_with_backpressure",
            "test_write_dataset_with_scanner_use_projected_schema",
            "test_write_scanner",
        ],
        _MEMORY,
    ),
    **dict.fromkeys(
        [
            "test_checksum_write_dataset_read_dataset_to_table",
            "test_feather_format_compressed",
            "test_write_dataset_content_defined_chunking",
            "test_write_dataset_parquet",
            "test_write_dataset_write_page_index",
        ],
        _WRITE_OPTIONS,
    ),
    **dict.fromkeys(
        [
            "test_dataset",
            "test_dataset_filter",
            "test_deterministic_row_order",
            "test_open_dataset_directory",
            "test_open_dataset_partitioned_directory",
            "test_open_dataset_single_file",
            "test_scanner",
            "test_scanner_memory_pool",
        ],
        _CLASSES,
    ),
    **dict.fromkeys(
        [
            "test_open_dataset_filesystem_fspath",
            "test_open_dataset_non_existing_file",
        ],
        _FS_URI,
    ),
    **dict.fromkeys(
        [
            "test_construct_from_invalid_sources_raise",
            "test_dataset_project_columns",
            "test_open_dataset_unsupported_format",
        ],
        _MESSAGES,
    ),
    "test_construct_dataset_with_invalid_schema": (
        "a given schema naming a column twice is refused when the dataset is made, where "
        "pyarrow refuses it when it is read"
    ),
    "test_dataset_preserved_partitioning": (
        "Dataset.partitioning gives no values for a discovered field that is not a "
        "dictionary (pyarrow's constructors take none), and a dataset read without "
        "partitioning has a DirectoryPartitioning of no fields, where pyarrow keeps the hive "
        "one it was not asked for"
    ),
    **dict.fromkeys(
        [
            "test_dictionary_partitioning_inner_nulls",
            "test_dictionary_partitioning_outer_nulls_raises",
            "test_hive_partitioning_nulls",
        ],
        "a table of partition columns only is refused ('every column is a partition "
        "column'): pyarrow writes Parquet files of no columns, which read back with no rows",
    ),
    **dict.fromkeys(
        ["test_incompatible_schema_hang", "test_specified_schema"],
        "a column a file holds in a type that cannot be cast to the given schema's is an "
        "error naming the file and both types, raised as zstdpool.ParameterError (a "
        "ValueError; ArrowInvalid through a RecordBatchReader), where pyarrow raises "
        "NotImplementedError",
    ),
    "test_partitioning": (
        "partitioning of a type zstdpool does not take (an int) raises TypeError, where "
        "pyarrow raises ValueError"
    ),
    "test_write_dataset_existing_data": (
        "existing_data_behavior='error' on a directory that is not empty raises "
        "FileExistsError (an OSError, as for any path that exists), where pyarrow raises "
        "ArrowInvalid"
    ),
    "test_write_dataset_max_open_files": (
        "rows wait in memory (max_pending_bytes) and each partition's file is written at "
        "once, so max_open_files seldom closes a file that more rows reach; pyarrow writes "
        "batches as they come, and a partition whose file it closed gets another file"
    ),
}


def _test_file() -> Path | None:
    spec = importlib.util.find_spec("pyarrow.tests.test_dataset")
    return Path(spec.origin) if spec and spec.origin else None


@pytest.mark.skipif(
    int(pa.__version__.split(".")[0]) != PYARROW_MAJOR,
    reason=f"the list of tests left out is for pyarrow {PYARROW_MAJOR}, not {pa.__version__}",
)
@pytest.mark.skipif(_test_file() is None, reason="this pyarrow installs no tests")
@pytest.mark.skipif(
    os.environ.get("ZSTDPOOL_EXPECT_INSTALLED") == "1",
    reason="pyarrow's suite is Python over the same core: it runs once, in the test command, "
    "not against every wheel of the release matrix",
)
def test_pyarrow_dataset_suite_passes_with_the_import_changed(tmp_path: Path) -> None:
    out = tmp_path / "outcomes.jsonl"
    env = subprocess_env()
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["ZSTDPOOL_SUITE_OUT"] = str(out)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.helpers.pyarrow_dataset_swap",
            "--pyargs",
            "pyarrow.tests.test_dataset",
            "--basetemp",
            str(tmp_path / "suite"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = [json.loads(line) for line in out.read_text().splitlines()]
    name = lambda test: test.split("[")[0]  # noqa: E731
    failed = {name(o["test"]): o["message"] for o in outcomes if o["outcome"] == "failed"}
    passing = [o["test"] for o in outcomes if o["outcome"] == "passed"]
    assert len(passing) > 150, done.stdout[-3000:]
    passed = {name(t) for t in passing}
    unexpected = {t: m for t, m in failed.items() if t not in LEFT_OUT}
    assert not unexpected, "\n\n".join(f"{t}:\n{m}" for t, m in unexpected.items())
    stale = sorted(t for t in LEFT_OUT if t not in failed and t in passed)
    assert not stale, f"left out, and now passing: {stale}"
