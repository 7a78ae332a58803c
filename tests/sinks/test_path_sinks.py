"""Path sinks in shared and private directories: planted links, kept permissions, links,
special files, full disks, durability and abandoned temporary files."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pyarrow as pa
import pytest
import zstdpool
import zstdpool.ipc

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file semantics")

TABLE = pa.table({"x": list(range(1000)), "s": [f"v{i % 7}" for i in range(1000)]})
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def read_back(path: Path) -> pa.Table:
    return zstdpool.ipc.read_file(path)


def test_links_planted_at_predictable_names_are_never_followed(tmp_path: Path) -> None:
    # The names a writer once chose (<target>.zstdpool-<pid>-<n>.tmp), each a link to a victim.
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    target = tmp_path / "out.arrow"
    for n in range(64):
        (tmp_path / f"out.arrow.zstdpool-{os.getpid()}-{n}.tmp").symlink_to(victim)
        (tmp_path / f".out.arrow.zstdpool-{os.getpid()}-{n:016x}.tmp").symlink_to(victim)
    zstdpool.ipc.write_file(TABLE, target)
    assert victim.read_bytes() == b"precious"
    assert read_back(target).equals(TABLE)


def test_the_temporary_name_is_hidden_random_and_recognisable(tmp_path: Path) -> None:
    target = tmp_path / "out.arrow"
    names = []
    for _ in range(2):
        with zstdpool.ipc.new_file(target, TABLE.schema) as w:
            names.append(temp_files(tmp_path))
            w.write(TABLE)
    pattern = re.compile(rf"^\.out\.arrow\.zstdpool-{os.getpid()}-[0-9a-f]{{16}}\.tmp$")
    assert all(len(n) == 1 and pattern.match(n[0]) for n in names), names
    assert names[0] != names[1]
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o444])
def test_a_replaced_file_keeps_its_permission_bits(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "private.arrow"
    zstdpool.ipc.write_file(TABLE.slice(0, 10), target)
    target.chmod(mode)
    zstdpool.ipc.write_file(TABLE, target)
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert read_back(target).equals(TABLE)


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another owner and group needs root")
def test_a_replaced_file_keeps_its_owner_and_group(tmp_path: Path) -> None:
    target = tmp_path / "theirs.arrow"
    zstdpool.ipc.write_file(TABLE.slice(0, 10), target)
    os.chown(target, 1, 2)
    target.chmod(0o640)
    with zstdpool.ipc.new_file(target, TABLE.schema) as w:
        w.write(TABLE)
    st = target.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1, 2, 0o640)


def test_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        zstdpool.ipc.write_stream(TABLE, tmp_path / "new.arrows")
        with open(tmp_path / "plain", "wb"):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.arrows").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == 0o640


def test_a_symlinked_target_stays_a_link_to_the_new_content(tmp_path: Path) -> None:
    real = tmp_path / "data" / "real.arrow"
    real.parent.mkdir()
    zstdpool.ipc.write_file(TABLE.slice(0, 1), real)
    real.chmod(0o600)
    link = tmp_path / "current.arrow"
    link.symlink_to(Path("data") / "real.arrow")
    zstdpool.ipc.write_file(TABLE, link)
    assert link.is_symlink() and os.readlink(link) == str(Path("data") / "real.arrow")
    assert read_back(real).equals(TABLE)
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert temp_files(real.parent) == [] and temp_files(tmp_path) == []


def test_a_link_to_nothing_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "dangling.arrow"
    link.symlink_to(tmp_path / "missing.arrow")
    with pytest.raises(FileNotFoundError, match="symbolic link to a file that does not exist"):
        zstdpool.ipc.write_file(TABLE, link)
    assert not (tmp_path / "missing.arrow").exists()
    assert link.is_symlink()


def test_other_hard_links_keep_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "a.arrow"
    zstdpool.ipc.write_file(TABLE.slice(0, 5), target)
    other = tmp_path / "b.arrow"
    os.link(target, other)
    zstdpool.ipc.write_file(TABLE, target)
    assert read_back(target).equals(TABLE)
    assert read_back(other).equals(TABLE.slice(0, 5))


def test_a_directory_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match="is a directory"):
        zstdpool.ipc.write_file(TABLE, tmp_path)
    with pytest.raises(IsADirectoryError):
        zstdpool.ipc.new_stream(tmp_path, TABLE.schema)
    assert list(tmp_path.iterdir()) == []


def test_dev_null_is_written_in_place_not_replaced() -> None:
    before = os.stat("/dev/null")
    zstdpool.ipc.write_file(TABLE, "/dev/null")
    with zstdpool.ipc.new_stream("/dev/null", TABLE.schema) as w:
        w.write(TABLE)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    zstdpool.ipc.write_stream(TABLE, fifo)
    reader.join(timeout=30)
    assert zstdpool.ipc.read_stream(got[0]).equals(TABLE)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def run_python(
    code: str, *, user: str | None = None, **kwargs: object
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        user=user,
        **kwargs,  # type: ignore[arg-type]
    )


def mount_tiny_tmpfs(where: Path, options: str = "size=64k") -> bool:
    """Mounts a small tmpfs at `where` (root only); False if that cannot be done here."""
    if not IS_ROOT or shutil.which("mount") is None:
        return False
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
    )
    return done.returncode == 0


def test_a_read_only_directory_fails_clearly_and_leaves_nothing(tmp_path: Path) -> None:
    shared = tmp_path / "ro"
    if IS_ROOT:
        # Root may write into any directory; a read-only file system refuses even root.
        if not mount_tiny_tmpfs(shared, options="ro"):
            pytest.skip("mounting a read-only tmpfs failed")
        expected = errno.EROFS
    else:
        shared.mkdir()
        shared.chmod(0o555)
        expected = errno.EACCES
    try:
        target = shared / "out.arrow"
        with pytest.raises(OSError) as info:
            zstdpool.ipc.write_file(TABLE, target)
        assert info.value.errno == expected and info.value.filename == str(target)
        assert "cannot write" in str(info.value)
        with pytest.raises(OSError):
            zstdpool.ipc.new_stream(target, TABLE.schema)
        assert list(shared.iterdir()) == []
    finally:
        if IS_ROOT:
            subprocess.run(["umount", str(shared)], check=True)
        else:
            shared.chmod(0o755)


def test_a_full_disk_fails_clearly_and_leaves_nothing(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    if not mount_tiny_tmpfs(disk):
        pytest.skip("mounting a small tmpfs needs root")
    try:
        big = pa.table({"x": [os.urandom(256 << 10) for _ in range(2)]})
        target = disk / "out.arrow"
        (disk / "kept.arrow").write_bytes(b"old")
        with pytest.raises(OSError) as info:
            zstdpool.ipc.write_file(big, target, compression=None)
        assert info.value.errno == errno.ENOSPC
        assert str(target) in str(info.value)
        with pytest.raises(OSError, match="No space left"):
            with zstdpool.ipc.new_file(disk / "kept.arrow", big.schema, compression=None) as w:
                w.write(big)
        assert sorted(p.name for p in disk.iterdir()) == ["kept.arrow"]
        assert (disk / "kept.arrow").read_bytes() == b"old"
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_file_size_limit_fails_clearly_and_leaves_nothing(tmp_path: Path) -> None:
    # A file system that refuses more bytes, without root: RLIMIT_FSIZE in a child process.
    result = run_python(
        f"""
        import resource, signal, pyarrow as pa, zstdpool.ipc
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            zstdpool.ipc.write_file(pa.table({{"x": list(range(100000))}}),
                                    {str(tmp_path / "out.arrow")!r}, compression=None)
        except OSError as e:
            print("refused:", e.errno)
        """
    )
    assert f"refused: {errno.EFBIG}" in result.stdout, result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []


def strace(code: str, tmp_path: Path) -> list[str]:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    log = tmp_path / "strace.log"
    script = tmp_path / "write.py"
    script.write_text(textwrap.dedent(code))
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(log),
            "-e",
            "trace=open,openat,fsync,fdatasync,renameat,renameat2,rename,close",
            sys.executable,
            str(script),
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    return log.read_text().splitlines()


@pytest.mark.parametrize("fsync", [True, False])
def test_fsync_syncs_the_file_and_its_directory(tmp_path: Path, fsync: bool) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "t.arrow"
    lines = strace(
        f"""
        import pyarrow as pa, zstdpool.ipc
        zstdpool.ipc.write_file(pa.table({{"x": [1, 2, 3]}}), {str(target)!r}, fsync={fsync})
        """,
        tmp_path,
    )
    fd_of: dict[str, str] = {}
    for line in lines:
        # open(path, ...) or openat(dirfd, path, ...): rustix opens a path from the working
        # directory with the former, glibc with the latter.
        m = re.search(r'open(?:at\(\w+, |\()"([^"]+)",.* = (\d+)$', line)
        if m:
            fd_of[m.group(1)] = m.group(2)
    dir_fd = fd_of[str(out)]
    temp = next(name for name in fd_of if name.startswith(".t.arrow.zstdpool-"))
    temp_fd = fd_of[temp]
    synced = {m.group(1) for line in lines if (m := re.search(r"f(?:data)?sync\((\d+)\)", line))}
    renames = [line for line in lines if "rename" in line and temp in line]
    assert len(renames) == 1 and f"renameat({dir_fd}," in renames[0], renames
    if fsync:
        assert {temp_fd, dir_fd} <= synced, (temp_fd, dir_fd, synced)

        def first(pattern: str) -> int:
            return next(i for i, line in enumerate(lines) if re.search(pattern, line))

        # The file is synced before the rename, the directory after it.
        rename = lines.index(renames[0])
        assert first(rf"f(data)?sync\({temp_fd}\)") < rename < first(rf"fsync\({dir_fd}\)")
    else:
        assert not synced & {temp_fd, dir_fd}, synced


def test_stale_temporary_files_of_a_killed_write_are_removed(tmp_path: Path) -> None:
    target = tmp_path / "t.arrow"
    zstdpool.ipc.write_file(TABLE, target)
    # A writer killed mid-write leaves its temporary file.
    result = run_python(
        f"""
        import os, pyarrow as pa, zstdpool.ipc
        w = zstdpool.ipc.new_file({str(target)!r}, pa.schema([("x", pa.int64())]))
        w.write(pa.table({{"x": [1, 2, 3]}}))
        os._exit(0)
        """
    )
    assert result.returncode == 0, result.stderr
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".u.zstdpool-1-0123456789abcdef.tmp").write_bytes(b"x")
    (tmp_path / ".not-ours.tmp").write_bytes(b"x")
    (tmp_path / ".link.zstdpool-1-0123456789abcdef.tmp").symlink_to(target)
    stale = temp_files(tmp_path)
    assert len(stale) == 3, stale
    assert zstdpool.remove_stale_temp_files(tmp_path) == []  # younger than an hour
    removed = zstdpool.remove_stale_temp_files(target, min_age=0)
    assert [Path(p).parent for p in removed] == [tmp_path] and len(removed) == 1
    removed = zstdpool.remove_stale_temp_files(tmp_path, min_age=0)
    assert [Path(p).name for p in removed] == [".u.zstdpool-1-0123456789abcdef.tmp"]
    assert temp_files(tmp_path) == [".link.zstdpool-1-0123456789abcdef.tmp", ".not-ours.tmp"]
    assert read_back(target).equals(TABLE)
    with pytest.raises(FileNotFoundError, match="cannot clean"):
        zstdpool.remove_stale_temp_files(tmp_path / "missing" / "t.arrow")
    with pytest.raises(ValueError, match="min_age"):
        zstdpool.remove_stale_temp_files(tmp_path, min_age=-1)


def test_stale_files_of_a_write_that_never_created_its_target_are_removed(
    tmp_path: Path,
) -> None:
    target = tmp_path / "new.parquet"
    result = run_python(
        f"""
        import os, pyarrow as pa, zstdpool.parquet
        w = zstdpool.parquet.ParquetWriter({str(target)!r}, pa.schema([("x", pa.int64())]))
        w.write(pa.table({{"x": [1, 2, 3]}}))
        w.flush()
        os._exit(0)
        """
    )
    assert result.returncode == 0, result.stderr
    assert not target.exists() and len(temp_files(tmp_path)) == 1
    removed = zstdpool.remove_stale_temp_files(target, min_age=0)
    assert len(removed) == 1 and isinstance(removed[0], Path), removed
    assert removed[0].parent == tmp_path and temp_files(tmp_path) == []
    assert zstdpool.remove_stale_temp_files(target, min_age=0) == []
