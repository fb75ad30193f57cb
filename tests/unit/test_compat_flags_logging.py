"""tf.logging, tf.flags and tf.app under compat.v1 behave as TensorFlow 1's."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest
from absl import flags as absl_flags

import daskgraph.compat.v1 as tf
from daskgraph.compat import flags as compat_flags


# -- tf.logging ---------------------------------------------------------------------------------
@pytest.fixture
def tf_records(caplog: pytest.LogCaptureFixture):
    before = tf.logging.get_verbosity()
    tf.logging.set_verbosity(tf.logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="tensorflow")
    yield caplog
    tf.logging.set_verbosity(before)


def test_logging_levels_are_pythons() -> None:
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR) == (
        10,
        20,
        30,
        40,
    )
    assert tf.logging.FATAL == logging.CRITICAL == 50
    assert tf.get_logger() is logging.getLogger("tensorflow")


def test_set_verbosity_filters_and_get_verbosity_reads_it(tf_records) -> None:
    tf.logging.set_verbosity(tf.logging.ERROR)
    assert tf.logging.get_verbosity() == tf.logging.ERROR
    tf.logging.info("dropped %d", 1)
    tf.logging.warn("dropped too")
    tf.logging.error("kept %s", "this")
    messages = [r.getMessage() for r in tf_records.records if r.name == "tensorflow"]
    assert messages == ["kept this"]


def test_records_name_the_callers_line(tf_records) -> None:
    tf.logging.info("here")
    tf.logging.log_if(tf.logging.WARN, "there %d", True, 2)
    tf.logging.log_if(tf.logging.WARN, "not there", False)
    first, second = [r for r in tf_records.records if r.name == "tensorflow"]
    assert first.filename == second.filename == "test_compat_flags_logging.py"
    assert (first.levelname, first.getMessage()) == ("INFO", "here")
    assert (second.levelname, second.getMessage()) == ("WARNING", "there 2")


def test_counted_logs_count_per_line(tf_records) -> None:
    for i in range(7):
        tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)
        tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    messages = [r.getMessage() for r in tf_records.records]
    assert messages == ["every 0", "first 0", "first 1", "every 3", "every 6"]


def test_fatal_logs_and_returns_flush_is_not_implemented(tf_records) -> None:
    tf.logging.fatal("bad %s", "thing")
    tf.logging.TaskLevelStatusMessage("status")
    tf.logging.vlog(tf.logging.DEBUG, "verbose")
    levels = [(r.levelno, r.getMessage()) for r in tf_records.records]
    assert levels == [(50, "bad thing"), (40, "status"), (10, "verbose")]
    with pytest.raises(NotImplementedError):
        tf.logging.flush()


# -- tf.flags -----------------------------------------------------------------------------------
def test_define_functions_take_tf1s_old_keyword_names() -> None:
    fv = absl_flags.FlagValues()
    tf.flags.DEFINE_string(
        flag_name="data_dir", default_value="/tmp/d", docstring="data", flag_values=fv
    )
    tf.flags.DEFINE_integer("batch", default_value=32, docstring="b", flag_values=fv)
    tf.flags.DEFINE_float("lr", 0.1, "rate", flag_values=fv)
    tf.flags.DEFINE_boolean("fast", False, "f", flag_values=fv)
    tf.flags.DEFINE_bool("slow", True, "s", flag_values=fv)
    tf.flags.DEFINE_list("hosts", "a,b", "h", flag_values=fv)
    tf.flags.DEFINE_enum("mode", "train", ["train", "eval"], "m", flag_values=fv)
    tf.flags.DEFINE_multi_string("tag", [], "t", flag_values=fv)
    rest = fv(["prog", "--batch=8", "--fast", "--noslow", "--tag=x", "--tag=y", "--mode=eval", "z"])
    assert rest == ["prog", "z"]
    values = (fv.data_dir, fv.batch, fv.lr, fv.fast, fv.slow, fv.hosts, fv.mode, fv.tag)
    assert values == ("/tmp/d", 8, 0.1, True, False, ["a", "b"], "eval", ["x", "y"])
    with pytest.raises(absl_flags.IllegalFlagValueError):
        fv(["prog", "--mode=predict"])


def test_flags_are_absls_with_one_registry() -> None:
    assert tf.app.flags is tf.flags
    assert tf.flags.FlagValues is absl_flags.FlagValues
    assert tf.flags.mark_flag_as_required is absl_flags.mark_flag_as_required
    assert isinstance(tf.flags.FLAGS, absl_flags.FlagValues)
    assert "verbosity" in dir(tf.flags.FLAGS)  # absl's own flags are there too


def test_flags_read_before_a_parse_parse_sys_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_integer("steps", 1, "n", flag_values=fv)
    wrapper = compat_flags._FlagValuesWrapper(fv)
    monkeypatch.setattr(sys, "argv", ["prog", "--steps=9"])
    assert not fv.is_parsed()
    assert wrapper.steps == 9  # absl alone raises UnparsedFlagAccessError
    assert fv.is_parsed()
    wrapper.steps = 4
    assert fv.steps == 4 and wrapper["steps"].value == 4 and "steps" in list(wrapper)
    with pytest.raises(absl_flags.UnparsedFlagAccessError):
        other = absl_flags.FlagValues()
        absl_flags.DEFINE_integer("k", 1, "k", flag_values=other)
        _ = other.k


# -- tf.app.run ---------------------------------------------------------------------------------
PROGRAM = textwrap.dedent(
    """
    import daskgraph.compat.v1 as tf

    tf.app.flags.DEFINE_integer("steps", 2, "how many")
    tf.app.flags.DEFINE_string("name", "x", "a name")
    FLAGS = tf.app.flags.FLAGS

    def main(argv):
        print("argv", argv[1:], "steps", FLAGS.steps, "name", FLAGS.name)
        return 3

    if __name__ == "__main__":
        tf.app.run()
    """
)


def test_app_run_parses_known_flags_and_exits_with_mains_result(tmp_path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    args = [sys.executable, str(script), "--steps=7", "rest", "--unknown=1", "--name=n"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    # TensorFlow 1: unknown flags stay in argv for main; main's result is the exit status
    assert done.stdout.strip() == "argv ['rest', '--unknown=1'] steps 7 name n", done.stderr
    assert done.returncode == 3
