"""``write_new``: output files are written whole or not at all, follow the umask, and ``--force`` replaces
only a regular file (``export/files.py``)."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from loom_explorer.export.files import OutputError, write_new


@pytest.fixture
def umask():
    """Set the process umask for one test, then put it back."""
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o000, 0o666)], ids=oct)
def test_a_new_file_follows_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    path = write_new(tmp_path / "out.json", "{}\n")
    assert path.read_text() == "{}\n"
    assert _mode(path) == mode


def test_force_replaces_a_regular_file_and_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    path = tmp_path / "out.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    with pytest.raises(OutputError, match="exists; pass --force"):
        write_new(path, "new")
    assert path.read_text() == "old"
    write_new(path, "new", force=True)
    assert path.read_text() == "new" and _mode(path) == 0o640


def test_force_through_a_symlink_replaces_the_file_it_points_to(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_new(link, "new", force=True)
    assert link.is_symlink() and real.read_text() == "new"


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    folder = tmp_path / "folder"
    folder.mkdir()
    links = {}
    for name, target in (
        ("to_fifo", fifo),
        ("to_null", "/dev/null"),
        ("to_nothing", tmp_path / "missing"),
        ("to_folder", folder),
    ):
        links[name] = tmp_path / name
        links[name].symlink_to(target)
    cases = [
        (fifo, "is a FIFO"),
        (sock_path, "is a socket"),
        (folder, "is a folder"),
        (links["to_fifo"], "is a symbolic link to a FIFO"),
        (links["to_null"], "is a symbolic link to a character device"),
        (links["to_nothing"], "is a symbolic link to nothing"),
        (links["to_folder"], "is a symbolic link to a folder"),
    ]
    return sock, cases


@pytest.mark.parametrize("force", [True, False])
def test_only_a_regular_file_is_ever_replaced(tmp_path, force):
    sock, cases = _special_files(tmp_path)
    try:
        for path, message in cases:
            before = os.lstat(path)
            with pytest.raises(OutputError, match=message):
                write_new(path, "data", force=force)
            after = os.lstat(path)
            assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode), path
        assert os.path.islink(tmp_path / "to_nothing") and not (tmp_path / "missing").exists()
        assert _leftovers(tmp_path) == []
    finally:
        sock.close()


@pytest.mark.parametrize(
    "target", ["/sys/loom_explorer_test.json", "/proc/loom_explorer_test.json", "/proc/self/status"]
)
def test_an_unwritable_target_is_one_line(target):
    if not os.path.isdir("/sys") or not os.path.isdir("/proc"):
        pytest.skip("needs Linux /sys and /proc")
    with pytest.raises(OutputError) as info:
        write_new(target, "{}", force=True)
    message = str(info.value)
    assert target in message and "\n" not in message


def test_a_missing_folder_or_a_file_as_folder(tmp_path):
    with pytest.raises(OutputError, match="does not exist"):
        write_new(tmp_path / "no" / "out.txt", "x")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="Not a directory|is not a folder"):
        write_new(tmp_path / "file" / "out.txt", "x")


def test_an_interrupt_leaves_nothing_half_written(tmp_path, monkeypatch):
    """Ctrl-C while the data goes to disk: no target, no temporary file; a replaced file keeps its contents."""

    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_new(tmp_path / "new.txt", "data")
    assert not (tmp_path / "new.txt").exists()
    old = tmp_path / "old.txt"
    old.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        write_new(old, "new", force=True)
    assert old.read_text() == "old"
    assert _leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]


def test_a_file_appearing_meanwhile_is_not_overwritten(tmp_path, monkeypatch):
    """Without --force the file is linked into place, which fails when another writer took the name first."""
    target = tmp_path / "out.txt"
    real_fsync = os.fsync

    def someone_else_writes(fd):
        real_fsync(fd)
        target.write_text("theirs")

    monkeypatch.setattr(os, "fsync", someone_else_writes)
    with pytest.raises(OutputError, match="exists"):
        write_new(target, "ours")
    assert target.read_text() == "theirs" and _leftovers(tmp_path) == []
