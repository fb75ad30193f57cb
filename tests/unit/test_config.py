"""Unit tests for daskgraph.config: SessionConfig/GPUOptions validation and Dask config keys."""

from __future__ import annotations

import dask
import pytest

from daskgraph.config import GPUOptions, SessionConfig, virtual_gpu_count


def test_defaults_validate() -> None:
    config = SessionConfig()
    assert config.validate() is config
    assert config.log_device_placement is False
    assert config.allow_soft_placement is False
    assert config.device_count == {}
    assert config.gpu_options == GPUOptions()
    assert config.gpu_options.validate() is config.gpu_options


def test_defaults_are_not_shared_between_instances() -> None:
    a, b = SessionConfig(), SessionConfig()
    a.gpu_options.allow_growth = True
    a.device_count["GPU"] = 0
    assert b.gpu_options.allow_growth is False
    assert b.device_count == {}


@pytest.mark.parametrize(
    "options",
    [
        GPUOptions(allow_growth=True),
        GPUOptions(per_process_gpu_memory_fraction=0.5),
        GPUOptions(per_process_gpu_memory_fraction=1),
        GPUOptions(per_process_gpu_memory_fraction=0),
        GPUOptions(visible_device_list="0, 1"),
        GPUOptions(visible_device_list=""),
    ],
    ids=["growth", "half", "int-one", "int-zero", "two-ids-spaced", "empty-list"],
)
def test_valid_gpu_options(options: GPUOptions) -> None:
    assert SessionConfig(gpu_options=options).validate().gpu_options is options


@pytest.mark.parametrize(
    ("config", "error", "field"),
    [
        (SessionConfig(log_device_placement="yes"), TypeError, "log_device_placement"),
        (SessionConfig(allow_soft_placement=1), TypeError, "allow_soft_placement"),
        (SessionConfig(gpu_options={"allow_growth": True}), TypeError, "gpu_options"),
        (SessionConfig(device_count={"GPU": -1}), ValueError, "device_count['GPU']"),
        (SessionConfig(device_count={"CPU": 1.5}), ValueError, "device_count['CPU']"),
        (SessionConfig(device_count={"GPU": "2"}), ValueError, "device_count['GPU']"),
        (
            SessionConfig(gpu_options=GPUOptions(allow_growth="true")),
            TypeError,
            "gpu_options.allow_growth",
        ),
        (
            SessionConfig(gpu_options=GPUOptions(per_process_gpu_memory_fraction=1.5)),
            ValueError,
            "gpu_options.per_process_gpu_memory_fraction",
        ),
        (
            SessionConfig(gpu_options=GPUOptions(per_process_gpu_memory_fraction=-0.1)),
            ValueError,
            "gpu_options.per_process_gpu_memory_fraction",
        ),
        (
            SessionConfig(gpu_options=GPUOptions(per_process_gpu_memory_fraction="0.5")),
            TypeError,
            "gpu_options.per_process_gpu_memory_fraction",
        ),
        (
            SessionConfig(gpu_options=GPUOptions(per_process_gpu_memory_fraction=True)),
            TypeError,
            "gpu_options.per_process_gpu_memory_fraction",
        ),
        (
            SessionConfig(gpu_options=GPUOptions(visible_device_list="0,gpu1")),
            ValueError,
            "gpu_options.visible_device_list",
        ),
        (
            SessionConfig(gpu_options=GPUOptions(visible_device_list="-1")),
            ValueError,
            "gpu_options.visible_device_list",
        ),
    ],
    ids=[
        "log-not-bool",
        "soft-not-bool",
        "gpu-options-dict",
        "negative-count",
        "float-count",
        "str-count",
        "growth-not-bool",
        "fraction-above-1",
        "fraction-negative",
        "fraction-str",
        "fraction-bool",
        "device-list-name",
        "device-list-negative",
    ],
)
def test_invalid_config_names_the_field(config: SessionConfig, error: type, field: str) -> None:
    with pytest.raises(error) as info:
        config.validate()
    assert str(info.value).startswith(field)


def test_invalid_value_is_quoted_in_the_message() -> None:
    with pytest.raises(ValueError, match=r"got 1\.5$"):
        GPUOptions(per_process_gpu_memory_fraction=1.5).validate()
    with pytest.raises(ValueError, match=r"got '0,gpu1'$"):
        GPUOptions(visible_device_list="0,gpu1").validate()


def test_device_count_rejects_bools() -> None:
    with pytest.raises((TypeError, ValueError), match="device_count"):
        SessionConfig(device_count={"GPU": True}).validate()


# -- daskgraph.virtual-gpus -------------------------------------------------------------------
def _registered_defaults() -> dict:
    """daskgraph's defaults as registered with Dask (whatever the environment overrides)."""
    found = [d["daskgraph"] for d in dask.config.defaults if "daskgraph" in d]
    assert found, "daskgraph.yaml was not registered with dask.config"
    return found[-1]


def test_virtual_gpu_count_defaults_to_zero() -> None:
    assert _registered_defaults()["virtual-gpus"] == 0
    with dask.config.set({"daskgraph.virtual-gpus": _registered_defaults()["virtual-gpus"]}):
        assert virtual_gpu_count() == 0


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0), (2, 2), ("3", 3)], ids=["zero", "two", "string"]
)
def test_virtual_gpu_count_from_dask_config(value, expected: int) -> None:
    before = dask.config.get("daskgraph.virtual-gpus")
    with dask.config.set({"daskgraph.virtual-gpus": value}):
        assert virtual_gpu_count() == expected
    assert dask.config.get("daskgraph.virtual-gpus") == before


@pytest.mark.parametrize(
    "value", [-1, "many", None, "2.5"], ids=["negative", "word", "none", "float-string"]
)
def test_virtual_gpu_count_bad_value(value) -> None:
    with dask.config.set({"daskgraph.virtual-gpus": value}):
        with pytest.raises(ValueError, match=r"daskgraph\.virtual-gpus") as info:
            virtual_gpu_count()
    assert "DASK_DASKGRAPH__VIRTUAL_GPUS" in str(info.value)
    assert repr(value) in str(info.value)


def test_virtual_gpu_count_rejects_a_fraction() -> None:
    with dask.config.set({"daskgraph.virtual-gpus": 1.5}), pytest.raises(ValueError):
        virtual_gpu_count()


def test_daskgraph_defaults_are_registered_with_dask() -> None:
    local = _registered_defaults()["local"]
    assert local["processes"] is True
    assert local["cpu-threads"] is None
    assert local["dashboard-address"] == "127.0.0.1:0"
