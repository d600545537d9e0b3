"""A history store is used in place (SQLite writes into the file): one that another user planted, in a shared
sticky folder or anywhere, would record this user's builds where its owner reads and edits them. Refused (with
its journal and WAL files and a folder another user owns): the build runs without history and says why. The
other user is real: ``setpriv --reuid=nobody`` makes the files."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest
from attacks import SMALL
from other_user import as_nobody

from trt_widget import Build
from trt_widget.history import list_builds

MAKE_STORE = """
import os, sqlite3, sys
os.umask(0)
conn = sqlite3.connect(sys.argv[1])
conn.executescript(
    "CREATE TABLE builds (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, status TEXT NOT NULL,"
    " created REAL NOT NULL, total_s REAL, label TEXT, record TEXT NOT NULL);"
)
conn.close()
os.chmod(sys.argv[1], 0o666)
"""


def plant_store(path: Path) -> None:
    """``nobody`` makes ``path`` a real (empty) history store anyone may write, as an attacker would."""
    as_nobody(sys.executable, "-c", MAKE_STORE, str(path))
    assert path.stat().st_uid != os.geteuid()


def rows(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM builds").fetchone()[0])


def built_without_history(history: object, where: Path) -> None:
    """A build given ``history`` warns that the store at ``where`` is another user's, and succeeds without it."""
    with pytest.warns(RuntimeWarning, match=rf"{where}.*(owned by|owns).*another user"):
        build = Build(SMALL, history=history, isolation="thread")  # type: ignore[arg-type]
    assert build.history is None
    assert build.start().wait(120) == "succeeded"
    assert any("another user" in problem["message"] for problem in build.problems)


def test_a_store_another_user_planted_in_a_shared_folder_is_not_used(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = shared / "history.sqlite"
    plant_store(planted)
    built_without_history(str(planted), planted)
    other = shared / "other"  # a second shared folder (a warning is given once per store)
    other.mkdir(mode=0o1777)
    other.chmod(0o1777)
    plant_store(other / "history.sqlite")
    monkeypatch.setenv("TRT_WIDGET_HISTORY", str(other))  # the folder: history.sqlite in it
    built_without_history(True, other / "history.sqlite")
    with pytest.raises(PermissionError, match="another user"):
        list_builds(str(planted))
    for store in (planted, other / "history.sqlite"):
        assert rows(store) == 0 and store.stat().st_uid != os.geteuid()


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_side_file_another_user_planted_beside_ones_own_store_is_refused(shared: Path, suffix: str) -> None:
    """SQLite writes its rollback journal into an existing ``-journal`` file (and replays one it finds hot): one
    ``nobody`` put beside the user's own store would receive the pages written."""
    store = shared / "h.sqlite"
    build = Build(SMALL, history=str(store), isolation="thread").start()
    assert build.wait(120) == "succeeded" and build.history is not None
    assert build.history.recorded.wait(60) and rows(store) == 1
    side = Path(f"{store}{suffix}")
    side.unlink(missing_ok=True)
    as_nobody("sh", "-c", f"touch {side} && chmod 666 {side}", timeout=30)
    built_without_history(str(store), side)
    assert side.exists() and side.stat().st_size == 0 and side.stat().st_uid != os.geteuid()
    assert rows(store) == 1


def test_a_folder_another_user_owns_is_not_used_for_a_store(shared: Path) -> None:
    """Its owner may read, remove or replace any file in it, sticky or not."""
    theirs = shared / "theirs"
    as_nobody("mkdir", "-m", "1777", str(theirs), timeout=30)
    built_without_history(str(theirs / "h.sqlite"), theirs)
    assert list(theirs.iterdir()) == []


def test_a_store_another_user_owns_in_ones_own_folder_is_refused_too(tmp_path: Path) -> None:
    """Not only in shared folders (as git's safe.directory): a store of another user's is theirs to read."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    store = tmp_path / "h.sqlite"
    sqlite3.connect(store).close()
    os.chown(store, 65534, 65534)
    built_without_history(str(store), store)
    assert store.stat().st_size == 0


def test_ones_own_store_in_a_shared_folder_is_used_and_keeps_its_journal(shared: Path) -> None:
    """The user's own store in /tmp still records; its journal stays a file of the user's (TRUNCATE mode), so
    ``nobody`` cannot slip one in between two builds."""
    store = shared / "h.sqlite"
    for count in (1, 2):
        build = Build(SMALL, history=str(store), isolation="thread").start()
        assert build.wait(120) == "succeeded" and build.history is not None
        assert build.history.recorded.wait(60) and rows(store) == count
    journal = Path(f"{store}-journal")
    assert journal.exists() and journal.stat().st_uid == os.geteuid() and journal.stat().st_size == 0


def test_a_reuse_dir_another_user_owns_gets_no_engine(shared: Path, tmp_path: Path) -> None:
    """``reuse_dir=/tmp/cache`` that ``nobody`` made first: the engine (the model's weights) and the hash cache
    copied there would be theirs to read. The build keeps its engine at ``output=`` and says why none was kept."""
    theirs = shared / "cache"
    as_nobody("mkdir", "-m", "0777", str(theirs), timeout=30)
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    output = tmp_path / "m.engine"
    build = Build(
        str(model), history=False, isolation="thread", output=str(output), reuse=True, reuse_dir=str(theirs)
    ).start()
    assert build.wait(120) == "succeeded" and output.stat().st_size > 0
    assert list(theirs.iterdir()) == []
    assert any(str(theirs) in problem["message"] and "another user" in problem["message"] for problem in build.problems)
