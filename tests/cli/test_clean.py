"""``zstdpool clean``: stale temporary files removed, nothing else touched."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.helpers.cli import run

STALE = ".out.arrow.zstdpool-123-0123456789abcdef.tmp"


def test_clean_removes_old_temporary_files_only(tmp_path: Path) -> None:
    (tmp_path / "out.arrow").write_bytes(b"kept")
    (tmp_path / "sub").mkdir()
    for path in (tmp_path / STALE, tmp_path / "sub" / STALE):
        path.write_bytes(b"partial")
        old = time.time() - 7200
        os.utime(path, (old, old))
    (tmp_path / ".young.zstdpool-1-0123456789abcdef.tmp").write_bytes(b"running")
    result = run("clean", tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(Path(p).name for p in result.stdout.split()) == [STALE, STALE]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".young.zstdpool-1-0123456789abcdef.tmp",
        "out.arrow",
        "sub",
    ]
    result = run("clean", tmp_path, "--min-age", "0")
    assert result.returncode == 0 and ".young" in result.stdout
    # A file that a killed write never created: nothing of it to clean, and no error.
    never = run("clean", tmp_path / "never.arrow")
    assert never.returncode == 0 and never.stdout == "", never
    missing = run("clean", tmp_path / "nope" / "t.arrow")
    assert missing.returncode == 1 and "nope" in missing.stdout
