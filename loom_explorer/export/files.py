"""Write an output file whole or not at all, and never over an existing file unless asked to.

The rules of :func:`write_new`:

* The text goes to a temporary file in the target's folder, is flushed to disk, then renamed onto the target:
  a reader sees the old file or the new one, never part of one. On any failure or interrupt (including
  Ctrl-C) the temporary file is removed.
* Without ``force`` an existing target is refused (and a file appearing meanwhile is not overwritten: the
  new file is linked into place, which fails if the name is taken).
* ``force`` replaces only a regular file, or a symbolic link to one (the file it points to is replaced and the
  link kept). A folder, FIFO, socket, device, or a link to one of them or to nothing, is refused whatever
  ``force`` says.
* A new file gets the permissions ``0o666 & ~umask``, as any program's output; a replaced file keeps its own.
* Every failure is an :class:`OutputError` of one line (missing or read-only folder, permission, ``/proc``).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

from loom_explorer.errors import LoomError


class OutputError(LoomError, ValueError):
    """An output file that cannot be written: it exists (without ``force``), is not a regular file, or its
    folder is missing or not writable."""


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _umask() -> int:
    """The process umask, read without changing it (Linux reports it in /proc/self/status)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, then put it back at once
    os.umask(mask)
    return mask


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _checked_target(target: Path, force: bool) -> tuple[Path, int | None]:
    """The file to write (a symlink resolved) and the mode to keep (None: a new file); OutputError if refused."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {_why(exc)}") from None
    except ValueError as exc:  # a NUL byte in the name
        raise OutputError(f"{str(target)!r} is not a file name ({exc})") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(target)
        except OSError:
            raise OutputError(f"{target} is a symbolic link to nothing; remove it or choose another name") from None
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(
                f"{target} is a symbolic link to {_kind(st.st_mode)}; only a regular file is ever replaced"
            ) from None
        target = Path(os.path.realpath(target))
    elif not stat.S_ISREG(st.st_mode):
        what = _kind(st.st_mode)
        hint = "give a file name" if what == "a folder" else "only a regular file is ever replaced"
        raise OutputError(f"{target} is {what}; {hint}")
    if not force:
        raise OutputError(f"{target} exists; pass --force to overwrite it")
    return target, stat.S_IMODE(st.st_mode)


def check_target(path: str | Path, force: bool = False) -> tuple[Path, int | None]:
    """Raise :class:`OutputError` now if :func:`write_new` would refuse ``path`` (to fail before long work);
    the file that would be written (a symlink resolved) and the mode it keeps (None: a new file)."""
    target = Path(path)
    if not str(path) or target.name in ("", ".", ".."):
        raise OutputError(f"{str(path)!r} is not a file name")
    target, keep_mode = _checked_target(target, force)
    folder = target.parent
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        raise OutputError(f"folder {folder} of {target} {what}")
    return target, keep_mode


def write_new(path: str | Path, text: str, force: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically under the rules of the module docstring; the path written."""
    target, keep_mode = check_target(path, force)
    folder = target.parent
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, keep_mode if keep_mode is not None else 0o666 & ~_umask())
        if force:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise OutputError(f"{target} exists; pass --force to overwrite it") from None
        raise OutputError(f"cannot write {target}: {_why(exc)}") from None
    finally:  # on success the temporary name is gone already (renamed, or unlinked after linking)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return target


def _link_new(tmp: str, target: Path) -> None:
    """Put ``tmp`` at ``target`` only if nothing is there (a hard link fails on an existing name); a file system
    without hard links gets a check and a rename."""
    try:
        os.link(tmp, target)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        os.replace(tmp, target)


def check_folder_target(path: str | Path, force: bool = False) -> Path:
    """Raise :class:`OutputError` now if :func:`write_new_folder` would refuse ``path``; the folder to write."""
    target = Path(path)
    if not str(path) or target.name in ("", ".", ".."):
        raise OutputError(f"{str(path)!r} is not a folder name")
    if os.path.lexists(target):
        if target.is_symlink() or not target.is_dir():
            raise OutputError(f"{target} exists and is not a folder; only a folder is ever replaced")
        if not force:
            raise OutputError(f"{target} exists; pass --force to overwrite it")
    if not target.parent.is_dir():
        raise OutputError(f"folder {target.parent} of {target} does not exist")
    return target


def write_new_folder(path: str | Path, files: dict[str, str], force: bool = False) -> Path:
    """Write ``files`` (name -> UTF-8 text) as the folder ``path``, whole or not at all: into a temporary folder
    beside it, each file flushed to disk, then renamed into place. Without ``force`` an existing ``path`` is
    refused; with it an existing folder (never a file or a link) is moved aside, replaced and then removed."""
    target = check_folder_target(path, force)
    tmp: str | None = None
    old: str | None = None
    try:
        tmp = tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        for name, text in files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o777 & ~_umask())
        if os.path.lexists(target):
            old = tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old")
            os.rename(target, os.path.join(old, "folder"))
        os.rename(tmp, target)  # fails on a non-empty folder that appeared meanwhile
        tmp = None
    except OSError as exc:
        if old is not None and not os.path.lexists(target):  # put the old folder back
            os.rename(os.path.join(old, "folder"), target)
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise OutputError(f"{target} exists; pass --force to overwrite it") from None
        raise OutputError(f"cannot write {target}: {_why(exc)}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return target
