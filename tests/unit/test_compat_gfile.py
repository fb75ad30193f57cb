"""tf.gfile and tf.io.gfile under compat.v1: the results and errors TensorFlow 2.21's
``tf.compat.v1.gfile`` gave for the same calls (recorded by running them there)."""

from __future__ import annotations

import os

import pytest

import daskgraph.compat.v1 as tf
from daskgraph import errors


@pytest.fixture
def folder(tmp_path) -> str:
    with tf.gfile.GFile(str(tmp_path / "a.txt"), "w") as f:
        f.write("héllo\nworld\n")
        f.write(b"bytes\n")
    return str(tmp_path)


def test_gfile_writes_and_reads_text_and_bytes(folder: str) -> None:
    path = os.path.join(folder, "a.txt")
    with tf.gfile.GFile(path) as f:
        assert (f.read(), f.tell(), f.size()) == ("héllo\nworld\nbytes\n", 19, 19)
    with tf.gfile.GFile(path, "rb") as f:
        assert f.readline() == b"h\xc3\xa9llo\n"
        assert f.readlines() == [b"world\n", b"bytes\n"]
        assert f.read() == b""
    with tf.gfile.Open(path) as f:
        f.seek(-6, 2)
        assert f.read() == "bytes\n"
        f.seek(offset=7)
        assert list(f) == ["world\n", "bytes\n"]
    assert (tf.gfile.GFile(path, "rb").name, tf.gfile.GFile(path, "rb").mode) == (path, "rb")
    with tf.gfile.GFile(path, "a") as f:
        f.write("more")
    assert tf.gfile.FastGFile(path, "r").read().endswith("bytes\nmore")


def test_gfile_opens_at_first_use_as_tensorflow(folder: str) -> None:
    missing = os.path.join(folder, "nope")
    handle = tf.gfile.GFile(missing)  # no error yet
    with pytest.raises(errors.NotFoundError, match=f"^{missing}; No such file or directory$"):
        handle.read()
    with tf.gfile.GFile(os.path.join(folder, "empty"), "w"):
        pass
    assert not tf.gfile.Exists(os.path.join(folder, "empty"))  # never written: not created
    with pytest.raises(errors.NotFoundError):
        tf.gfile.GFile(os.path.join(folder, "no_dir", "f"), "w").write("x")


def test_gfile_refuses_what_tensorflow_refuses(folder: str) -> None:
    path = os.path.join(folder, "a.txt")
    with pytest.raises(errors.InvalidArgumentError, match="mode is not 'r' or 'w' or 'a'"):
        tf.gfile.GFile(path, "x")
    with pytest.raises(errors.PermissionDeniedError, match="File isn't open for writing"):
        tf.gfile.GFile(path, "r").write("x")
    with pytest.raises(errors.PermissionDeniedError, match="File isn't open for reading"):
        tf.gfile.GFile(path, "w").read()
    with pytest.raises(TypeError, match="seek\\(\\): offset argument required"):
        tf.gfile.GFile(path).seek()
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 5"):
        tf.gfile.GFile(os.path.join(folder, "w"), "w").write(5)
    with pytest.raises(UnicodeDecodeError):  # TensorFlow decodes the bytes read, here 'h\xc3'
        tf.gfile.GFile(path).read(2)


def test_directories(folder: str) -> None:
    tf.gfile.MkDir(folder)  # exists: nothing, as TensorFlow
    with pytest.raises(errors.NotFoundError, match="x/y; No such file or directory"):
        tf.gfile.MkDir(os.path.join(folder, "x", "y"))
    tf.gfile.MakeDirs(os.path.join(folder, "x", "y", "z"))
    tf.gfile.MakeDirs(os.path.join(folder, "x", "y", "z"))
    path = os.path.join(folder, "a.txt")
    with pytest.raises(errors.FailedPreconditionError, match=f"^{path} is not a directory$"):
        tf.gfile.MakeDirs(os.path.join(path, "sub"))
    assert tf.gfile.ListDirectory(folder) == ["a.txt", "x"]
    assert tf.gfile.ListDirectory(folder + "/") == ["a.txt", "x"]
    for bad in (os.path.join(folder, "nope"), path):
        with pytest.raises(errors.NotFoundError, match=f"^Could not find directory {bad}$"):
            tf.gfile.ListDirectory(bad)
    assert (tf.gfile.IsDirectory(folder), tf.gfile.IsDirectory(path)) == (True, False)
    assert not tf.gfile.IsDirectory(os.path.join(folder, "q"))
    assert (tf.gfile.Exists(path), tf.gfile.Exists(""), tf.gfile.Exists(folder + "/")) == (
        True,
        False,
        True,
    )


def test_walk_and_glob(folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tf.gfile.MakeDirs(os.path.join(folder, "x2", "y"))
    assert list(tf.gfile.Walk(folder)) == [
        (folder, ["x2"], ["a.txt"]),
        (os.path.join(folder, "x2"), ["y"], []),
        (os.path.join(folder, "x2", "y"), [], []),
    ]
    assert [d for d, _, _ in tf.gfile.Walk(folder, in_order=False)] == [
        os.path.join(folder, "x2", "y"),
        os.path.join(folder, "x2"),
        folder,
    ]
    assert list(tf.gfile.Walk(os.path.join(folder, "nope"))) == []
    assert tf.gfile.Glob(folder + "/*.txt") == [os.path.join(folder, "a.txt")]
    assert tf.gfile.Glob(folder + "/*.zz") == tf.gfile.Glob(folder + "/nope/*.txt") == []
    monkeypatch.chdir(folder)
    assert tf.gfile.Glob("*.txt") == ["./a.txt"]  # TensorFlow's spelling
    assert tf.gfile.Glob(["x2", "*.txt"]) == ["x2", "./a.txt"]
    errs = []
    assert list(tf.io.gfile.walk("nope", onerror=errs.append)) == []
    assert isinstance(errs[0], errors.NotFoundError)


def test_copy_rename_remove(folder: str) -> None:
    a, b, c = (os.path.join(folder, n) for n in ("a.txt", "b.txt", "c.txt"))
    tf.gfile.Copy(a, b)
    with pytest.raises(errors.AlreadyExistsError, match=r"^file already exists$"):
        tf.gfile.Copy(a, b)
    tf.gfile.Copy(a, b, overwrite=True)
    with pytest.raises(errors.NotFoundError, match="nope; No such file or directory"):
        tf.gfile.Copy(os.path.join(folder, "nope"), c)
    with pytest.raises(errors.NotFoundError, match=r"nodir/c\.txt; No such file or directory"):
        tf.gfile.Copy(a, os.path.join(folder, "nodir", "c.txt"))
    with pytest.raises(errors.AlreadyExistsError, match=r"^file already exists$"):
        tf.gfile.Rename(a, b)
    tf.gfile.Rename(b, c)
    assert (tf.gfile.Exists(b), tf.gfile.GFile(c).read()) == (False, "héllo\nworld\nbytes\n")
    with pytest.raises(errors.NotFoundError, match=r"b\.txt; No such file or directory"):
        tf.gfile.Rename(b, os.path.join(folder, "e.txt"))
    tf.gfile.MakeDirs(os.path.join(folder, "x", "y"))
    tf.gfile.Rename(os.path.join(folder, "x"), os.path.join(folder, "x2"))
    assert tf.gfile.IsDirectory(os.path.join(folder, "x2", "y"))
    with pytest.raises(errors.FailedPreconditionError, match="x2; Is a directory"):
        tf.gfile.Remove(os.path.join(folder, "x2"))
    with pytest.raises(errors.NotFoundError, match="nope; No such file or directory"):
        tf.gfile.Remove(os.path.join(folder, "nope"))
    with pytest.raises(errors.NotFoundError, match="nope not found"):
        tf.gfile.DeleteRecursively(os.path.join(folder, "nope"))
    tf.gfile.DeleteRecursively(os.path.join(folder, "x2"))
    tf.gfile.Remove(c)
    assert tf.gfile.ListDirectory(folder) == ["a.txt"]


def test_stat(folder: str) -> None:
    path = os.path.join(folder, "a.txt")
    stat = tf.gfile.Stat(path)
    assert (stat.length, stat.is_directory, stat.mtime_nsec) == (
        19,
        False,
        os.stat(path).st_mtime_ns,
    )
    assert tf.gfile.Stat(folder).is_directory
    with pytest.raises(errors.NotFoundError, match="nope; No such file or directory"):
        tf.gfile.Stat(os.path.join(folder, "nope"))


def test_other_file_systems_through_fsspec() -> None:
    root = "memory://dg_gfile_test"
    tf.gfile.MakeDirs(root + "/sub")
    with tf.gfile.GFile(root + "/sub/f.txt", "w") as f:
        f.write("in memory")
    assert tf.gfile.GFile(root + "/sub/f.txt").read() == "in memory"
    assert tf.gfile.ListDirectory(root) == ["sub"]
    (found,) = tf.gfile.Glob(root + "/sub/*.txt")  # fsspec's spelling: memory:///dg_...
    assert found.endswith("dg_gfile_test/sub/f.txt") and tf.gfile.GFile(found).read() == "in memory"
    assert tf.gfile.Stat(root + "/sub/f.txt").length == 9
    tf.gfile.DeleteRecursively(root)
    assert not tf.gfile.Exists(root + "/sub/f.txt")


def test_io_gfile_names_are_tensorflow_2s() -> None:
    names = ["GFile", "copy", "exists", "get_registered_schemes", "glob", "isdir", "join"]
    names += ["listdir", "makedirs", "mkdir", "remove", "rename", "rmtree", "stat", "walk"]
    assert all(hasattr(tf.io.gfile, n) for n in names)
    assert tf.io.gfile.rmtree is tf.gfile.DeleteRecursively and tf.io.gfile.GFile is tf.gfile.GFile
    assert tf.io.gfile.join("a", "b", "c") == "a/b/c"
    assert tf.io.gfile.join("gs://b", "x", "y") == "gs://b/x/y"
    assert tf.io.gfile.join("gs://b/", "x") == "gs://b/x"
    assert "memory" in tf.io.gfile.get_registered_schemes()
