"""Every build option reaches TensorRT: read back from TensorRT's own objects, or seen in what TensorRT logs.

A build that merely succeeds proves nothing about an option (most have defaults that build just as well), so:

- thread isolation, with a spy around TensorRT's ``Builder`` (every call passes through to the real one): the
  builder config that ``build_serialized_network`` receives is read back (optimization level, workspace limit,
  optimization profile shapes, timing cache), as are the flags the network was created with;
- the default builder process: TensorRT's own log lines (VERBOSE ones captured at all, the optimization level,
  the dynamic dimension's range from the profile, the timing cache in use, read and written), and the files.

The engine itself cannot be inspected here: ``Runtime.deserialize_cuda_engine`` (and so the EngineInspector)
needs a CUDA device, and TensorRT for RTX on the CPU fails it ("CUDA driver version is insufficient").
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, _backend, _engine, models
from trt_widget._backend import select_backend, trt
from trt_widget._engine import CaptureLogger, ModelSource
from trt_widget._expected import RTX_TIMING_CACHE
from trt_widget._monitor import BuildMonitor
from trt_widget._options import BuildOptions

PROFILE = ((2, 8, 8, 8), (3, 8, 8, 8), (6, 8, 8, 8))


class _SpyBuilder:
    """TensorRT's builder, recording what trt_widget asks of it."""

    def __init__(self, real: Any, spy: Spy) -> None:
        self._real, self._spy = real, spy

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def create_network(self, flags: int) -> Any:
        self._spy.network_flags.append(flags)
        return self._real.create_network(flags)

    def create_optimization_profile(self) -> Any:
        profile = self._real.create_optimization_profile()
        self._spy.profiles.append(profile)
        return profile

    def create_builder_config(self) -> Any:
        config = self._real.create_builder_config()
        if self._spy.fake_flags is not None:
            return _NvidiaOnlyConfig(config, self._spy)
        return _RefusingConfig(config, self._spy) if self._spy.refuse else config

    def build_serialized_network(self, network: Any, config: Any) -> Any:
        config = getattr(config, "_real", config)
        self._spy.configs.append(self._spy.read_back(network, config))
        return self._real.build_serialized_network(network, config)


class _RefusingConfig:
    """TensorRT's builder config, except that ``set_timing_cache`` refuses what ``spy.refuse`` names: "loaded"
    (caches made from a file's bytes, as TensorRT refuses one made by another version or device) or "all"."""

    def __init__(self, real: Any, spy: Spy) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_spy", spy)
        object.__setattr__(self, "_loaded", set())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)

    def create_timing_cache(self, data: bytes) -> Any:
        cache = self._real.create_timing_cache(data)
        if data:
            self._loaded.add(id(cache))
        return cache

    def set_timing_cache(self, cache: Any, ignore_mismatch: bool) -> bool:
        if self._spy.refuse == "all" or (self._spy.refuse == "loaded" and id(cache) in self._loaded):
            return False
        return bool(self._real.set_timing_cache(cache, ignore_mismatch))


class _Member:
    """A member of an NVIDIA-only enum value (one TensorRT for RTX lacks)."""

    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def __int__(self) -> int:
        return self.value


class _Extended:
    """A TensorRT enum with the members only NVIDIA TensorRT 10.x has added (the real members pass through)."""

    def __init__(self, real: Any, extra: dict[str, int]) -> None:
        self._real = real
        self._extra = {name: _Member(name, value) for name, value in extra.items()}

    def __getattr__(self, name: str) -> Any:
        return self._extra[name] if name in self._extra else getattr(self._real, name)

    def __dir__(self) -> list[str]:
        return [*dir(self._real), *self._extra]


# NVIDIA TensorRT 10.x's BuilderFlag precisions and TacticSource members that TensorRT for RTX does not have
# (NVIDIA's python/src/infer/pyCore.cpp, v10.16: BuilderFlag.FP16/BF16/INT8/FP8; TacticSource.CUBLAS, CUBLAS_LT,
# CUDNN); the values are NVIDIA's (NvInfer.h), so tactic-source bits land where NVIDIA's would.
NVIDIA_ONLY_FLAGS = {"FP16": 0, "INT8": 1, "BF16": 17, "FP8": 18}
NVIDIA_ONLY_TACTIC_SOURCES = {"CUBLAS": 0, "CUBLAS_LT": 1, "CUDNN": 2}


class _NvidiaOnlyConfig:
    """TensorRT for RTX's builder config, which also takes NVIDIA-only flags and tactic-source bits (recorded)."""

    def __init__(self, real: Any, spy: Spy) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_spy", spy)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)

    def set_flag(self, flag: Any) -> None:
        if isinstance(flag, _Member):
            self._spy.fake_flags.append(flag.name)
        else:
            self._real.set_flag(flag)

    def set_tactic_sources(self, mask: int) -> bool:
        self._spy.tactic_masks.append(mask)
        real_bits = sum(
            1 << int(getattr(self._spy.real.TacticSource, n)) for n in _enum_names(self._spy.real.TacticSource)
        )
        return bool(self._real.set_tactic_sources(mask & real_bits))


def _enum_names(enum: Any) -> list[str]:
    return [n for n in dir(enum) if n.isupper()]


class Spy:
    """Stands in for the TensorRT module inside ``_engine``: the real one, except that ``Builder`` is spied on."""

    def __init__(self) -> None:
        self.real: Any = trt()  # the whole module: the tests reach past what trt_widget itself calls
        self.network_flags: list[int] = []
        self.profiles: list[Any] = []
        self.configs: list[dict[str, Any]] = []
        self.builders: list[Any] = []
        self.refuse = ""  # "loaded" or "all": timing caches the builder config refuses (see _RefusingConfig)
        self.fake_flags: list[str] | None = None  # with nvidia_only(): the NVIDIA-only flags set
        self.tactic_masks: list[int] = []

    def nvidia_only(self) -> None:
        """Also offer the NVIDIA-only API (precision flags, tactic sources) that TensorRT for RTX lacks."""
        self.fake_flags = []
        self.BuilderFlag = _Extended(self.real.BuilderFlag, NVIDIA_ONLY_FLAGS)
        self.TacticSource = _Extended(self.real.TacticSource, NVIDIA_ONLY_TACTIC_SOURCES)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def Builder(self, logger: Any) -> _SpyBuilder:  # TensorRT's name
        builder = self.real.Builder(logger)
        self.builders.append(builder)
        return _SpyBuilder(builder, self)

    def read_back(self, network: Any, config: Any) -> dict[str, Any]:
        """What TensorRT's config and network hold when the build starts."""
        t = self.real
        inputs = [network.get_input(i).name for i in range(network.num_inputs)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            cache = config.get_timing_cache()
        return {
            "optimization_level": config.builder_optimization_level,
            "workspace": config.get_memory_pool_limit(t.MemoryPoolType.WORKSPACE),
            "num_profiles": config.num_optimization_profiles,
            "profiles": [{name: tuple(tuple(s) for s in p.get_shape(name)) for name in inputs} for p in self.profiles],
            "timing_cache": cache is not None,
            "strongly_typed": bool(network.get_flag(t.NetworkDefinitionCreationFlag.STRONGLY_TYPED)),
            "progress_monitor": config.progress_monitor is not None,
            "flags": sorted(n for n in _enum_names(t.BuilderFlag) if config.get_flag(getattr(t.BuilderFlag, n))),
            "attrs": {name: _readable(getattr(config, name, None)) for name in CONFIG_ATTRIBUTES},
            "tactic_sources": int(config.get_tactic_sources()),
        }


CONFIG_ATTRIBUTES = (
    "max_aux_streams",
    "avg_timing_iterations",
    "max_num_tactics",
    "DLA_core",
    "hardware_compatibility_level",
    "profiling_verbosity",
    "tiling_optimization_level",
)


def _readable(value: Any) -> Any:
    return getattr(value, "name", value)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    spy = Spy()
    monkeypatch.setattr(_engine, "trt", lambda: spy)
    return spy


def built(model: Any, **options: Any) -> Build:
    build = Build(model, isolation="thread", history=False, resources=False, **options).start()
    assert build.wait(180) == "succeeded", build.status_detail
    return build


def test_a_default_build_leaves_the_builder_config_at_tensorrts_defaults(spy: Spy) -> None:
    build = built(models.deep_residual(3))
    severities = {r["severity"] for r in build.logs}
    assert "INFO" in severities and "VERBOSE" not in severities  # the router drops VERBOSE lines, only them
    fresh = spy.builders[0].create_builder_config()  # one the build did not touch
    (config,) = spy.configs
    assert config["optimization_level"] == fresh.builder_optimization_level
    assert config["workspace"] == fresh.get_memory_pool_limit(spy.real.MemoryPoolType.WORKSPACE)
    assert config["num_profiles"] == 0 and not config["timing_cache"]
    assert config["progress_monitor"]  # the phase tree and Stop depend on it


@pytest.mark.parametrize("level", [0, 2, 5])  # 3 is TensorRT's default: no proof that the option got through
def test_optimization_level_reaches_the_builder_config(spy: Spy, level: int) -> None:
    built(models.deep_residual(3), optimization_level=level)
    assert [c["optimization_level"] for c in spy.configs] == [level]


def test_workspace_reaches_the_builder_config(spy: Spy) -> None:
    built(models.deep_residual(3), workspace="48MiB")
    assert [c["workspace"] for c in spy.configs] == [48 << 20]


def test_profiles_reach_the_builder_config_with_their_shapes(spy: Spy) -> None:
    built(models.deep_residual(3, batch="N"), profiles={"input": PROFILE})
    (config,) = spy.configs
    assert config["num_profiles"] == 1
    assert config["profiles"] == [{"input": PROFILE}]


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_timing_cache_is_set_on_the_builder_config(spy: Spy, tmp_path: Path) -> None:
    built(models.deep_residual(3), timing_cache=tmp_path / "t.cache")
    assert [c["timing_cache"] for c in spy.configs] == [True]


@pytest.mark.parametrize("strongly_typed", [True, False])
def test_strongly_typed_is_the_network_creation_flag(spy: Spy, strongly_typed: bool) -> None:
    """TensorRT for RTX makes every network strongly typed whatever the flags (and refuses
    ``strongly_typed=False`` at Build), so what is checked is the flag trt_widget hands to ``create_network``;
    NVIDIA TensorRT 10.x builds a weakly typed network without it. ``strongly_typed=False`` is passed to
    ``build_engine`` directly here, below the backend check that refuses it on RTX."""
    bit = 1 << int(spy.real.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    options = BuildOptions(strongly_typed=strongly_typed, isolation="thread")
    logger = CaptureLogger()
    engine = _engine.build_engine(ModelSource.of(models.deep_residual(3)), options, BuildMonitor(), logger)
    assert engine is not None, logger.errors()
    assert [bool(flags & bit) for flags in spy.network_flags] == [strongly_typed]
    weak = bool(_backend.capabilities()["weak_typing"])  # NVIDIA 10.x: without the flag, weakly typed
    assert [c["strongly_typed"] for c in spy.configs] == [strongly_typed or not weak]  # RTX and 11.x: always


def test_the_builder_process_hands_every_option_to_tensorrt(tmp_path: Path) -> None:
    """The default runner: the options cross to the builder process, and TensorRT's log says it used them."""
    cache, output = tmp_path / "t.cache", tmp_path / "m.engine"
    damaged = _a_timing_cache()[:4] + b"not a timing cache " * 8  # begins as one: TensorRT is given its bytes
    cache.write_bytes(damaged)
    build = Build(
        models.deep_residual(3, batch="N"),
        history=False,
        resources=False,
        verbose=True,
        optimization_level=0,
        profiles={"input": PROFILE},
        timing_cache=cache,
        output=output,
    ).start()
    assert build.wait(180) == "succeeded", build.status_detail
    lines = [r["message"] for r in build.logs]
    assert any(r["severity"] == "VERBOSE" for r in build.logs)  # verbose=True reached the worker's logger
    assert any("at optimization level 0" in m for m in lines)  # e.g. "Set number of tactics to 1 at ..."
    assert any("[2,6]" in m for m in lines)  # TensorRT's range of the dynamic batch dimension: the profile's
    if _engine.uses_timing_cache(select_backend()[0]):
        assert any("Failed to deserialize timing cache" in m for m in lines)  # TensorRT was given the file's bytes
        assert any("Global timing cache in use" in m for m in lines)  # (without a cache: "Local timing cache")
        assert cache.read_bytes() != damaged and cache.stat().st_size > 0  # TensorRT's, saved
    else:  # TensorRT for RTX: the option reached the worker, which says it skips the file
        assert any(m.startswith(RTX_TIMING_CACHE) and str(cache) in m for m in lines), lines
        assert cache.read_bytes() == damaged and not any("Global timing cache" in m for m in lines)
    assert output.read_bytes() == build.engine

    plain = Build(models.deep_residual(3), history=False, resources=False).start()
    assert plain.wait(180) == "succeeded", plain.status_detail
    assert not [r for r in plain.logs if r["severity"] == "VERBOSE"]
    assert not [r for r in plain.logs if "Global timing cache" in r["message"]]


def _warnings(build: Build) -> list[str]:
    return [p["message"] for p in build.problems if p["severity"] == "WARNING" and "timing_cache" in p["message"]]


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_timing_cache_notes_say_what_tensorrt_does_with_it(tmp_path: Path) -> None:
    cache = tmp_path / "t.cache"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes = _warnings(built(models.deep_residual(3), timing_cache=cache, optimization_level=0))
    assert not [w for w in caught if "Timing cache" in str(w.message)]  # TensorRT's own DeprecationWarnings
    assert any("optimization_level=0 does not use the timing cache" in n for n in notes)
    assert not any(RTX_TIMING_CACHE in n for n in notes)
    level1 = _warnings(built(models.deep_residual(3), timing_cache=cache, optimization_level=1))
    assert not [n for n in level1 if "optimization_level=0" in n]
    assert not _warnings(built(models.deep_residual(3)))  # no cache, no notes


def _a_timing_cache() -> bytes:
    """A timing cache as this TensorRT writes one (its magic first), with entries of "another TensorRT" after it."""
    with warnings.catch_warnings(), _engine.routed_logs(CaptureLogger()) as router:
        warnings.simplefilter("ignore", DeprecationWarning)
        tensorrt: Any = trt()  # the timing cache API, beyond what trt_widget's own types cover
        config = tensorrt.Builder(router).create_builder_config()
        return bytes(memoryview(config.create_timing_cache(b"").serialize())) + b"from another TensorRT"


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_cache_tensorrt_refuses_is_replaced_and_a_refused_new_one_is_done_without(spy: Spy, tmp_path: Path) -> None:
    cache = tmp_path / "t.cache"
    other = _a_timing_cache()
    cache.write_bytes(other)
    spy.refuse = "loaded"  # the file's cache: TensorRT builds with a new one, which replaces the file
    notes = _warnings(built(models.deep_residual(3), timing_cache=cache))
    assert any("does not fit this TensorRT version or device; building with a new cache" in n for n in notes)
    assert cache.read_bytes() != other and spy.configs[-1]["timing_cache"]

    cache.write_bytes(other)
    spy.refuse = "all"  # the new one too: the build goes on without a cache and leaves the file alone
    notes = _warnings(built(models.deep_residual(3), timing_cache=cache))
    assert any("TensorRT refused a new timing cache; building without one" in n for n in notes)
    assert cache.read_bytes() == other

    cache.unlink()  # no file, and the new cache refused: without one, and no file appears
    notes = _warnings(built(models.deep_residual(3), timing_cache=cache))
    assert any("refused a new timing cache" in n for n in notes) and not any("does not fit" in n for n in notes)
    assert not cache.exists()


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_file_that_is_not_a_timing_cache_is_left_as_it_was(spy: Spy, tmp_path: Path) -> None:
    """TensorRT reads any bytes as an empty cache: saving the build's would overwrite a file named by mistake."""
    notes_file = tmp_path / "notes.txt"
    notes_file.write_text("my notes, named as --timing-cache by mistake\n")
    build = built(models.deep_residual(3), timing_cache=notes_file)
    assert notes_file.read_text() == "my notes, named as --timing-cache by mistake\n"
    (note,) = [n for n in _warnings(build) if "is not a TensorRT timing cache" in n]
    assert str(notes_file) in note and "left as it was" in note
    assert not spy.configs[-1]["timing_cache"] and (build.engine_size or 0) > 0  # built, without a cache
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no lock or partial file beside it


# -- trtexec's build settings (issue 30): each one read back from the config the build ran with ---------------------
@pytest.mark.parametrize(
    "options, flags, attrs",
    [
        ({"tf32": False}, {"TF32": False}, {}),
        ({"tf32": True}, {"TF32": True}, {}),
        ({"sparse_weights": True}, {"SPARSE_WEIGHTS": True}, {}),
        (
            {"version_compatible": True, "exclude_lean_runtime": True},
            {"VERSION_COMPATIBLE": True, "EXCLUDE_LEAN_RUNTIME": True},
            {},
        ),
        ({"max_aux_streams": 2}, {}, {"max_aux_streams": 2}),
        ({"avg_timing_iterations": 4}, {}, {"avg_timing_iterations": 4}),
        ({"max_tactics": 3}, {}, {"max_num_tactics": 3}),
        ({"profiling_verbosity": "detailed"}, {}, {"profiling_verbosity": "DETAILED"}),
        ({"profiling_verbosity": "none"}, {}, {"profiling_verbosity": "NONE"}),
        ({"tiling_optimization_level": 1}, {}, {"tiling_optimization_level": "FAST"}),
    ],
    ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) and v else "-",
)
def test_trtexec_settings_reach_the_builder_config(
    spy: Spy, options: dict[str, Any], flags: dict[str, bool], attrs: dict[str, Any]
) -> None:
    built(models.deep_residual(3), **options)
    (config,) = spy.configs
    assert {name: name in config["flags"] for name in flags} == flags
    assert {name: config["attrs"][name] for name in attrs} == attrs


@pytest.mark.parametrize(
    "spelling, member", [("ampere+", "AMPERE_PLUS"), ("sameComputeCapability", "SAME_COMPUTE_CAPABILITY")]
)
def test_hardware_compatibility_reaches_the_config_or_is_refused_where_ignored(
    spy: Spy, spelling: str, member: str
) -> None:
    """TensorRT for RTX has the setter but ignores it ("setHardwareCompatibilityLevel() is unsupported in
    TensorRT-RTX"): the value is read back, and a value TensorRT did not keep fails the build naming it."""
    build = Build(
        models.deep_residual(3), isolation="thread", history=False, resources=False, hardware_compatibility=spelling
    ).start()
    status = build.wait(180)
    if select_backend()[0] == "rtx":
        assert status == "failed" and not spy.configs
        assert build.status_detail.startswith(f"hardware_compatibility={member.lower()!r} is not available with")
        assert any("setHardwareCompatibilityLevel() is unsupported" in p["message"] for p in build.problems)
    else:
        assert status == "succeeded" and spy.configs[0]["attrs"]["hardware_compatibility_level"] == member


def test_defaults_leave_those_settings_as_tensorrt_has_them(spy: Spy) -> None:
    """All but one: the engine report (on by default) asks for DETAILED profiling verbosity; with it off, none."""
    built(models.deep_residual(3))
    built(models.deep_residual(3), engine_report=False)
    fresh = spy.builders[0].create_builder_config()
    reported, plain = spy.configs
    tensorrts = {name: _readable(getattr(fresh, name)) for name in CONFIG_ATTRIBUTES}
    assert reported["attrs"] == {**tensorrts, "profiling_verbosity": "DETAILED"}
    config = plain
    assert config["attrs"] == tensorrts
    assert config["flags"] == sorted(
        n for n in _enum_names(spy.real.BuilderFlag) if fresh.get_flag(getattr(spy.real.BuilderFlag, n))
    )
    assert config["tactic_sources"] == int(fresh.get_tactic_sources())


@pytest.mark.parametrize("options, flags", [({"refit": True}, ["REFIT"]), ({"strip_weights": True}, ["STRIP_PLAN"])])
def test_refit_and_strip_weights_reach_the_config_and_tensorrts_own_failure_is_said(
    spy: Spy, options: dict[str, Any], flags: list[str]
) -> None:
    """TensorRT for RTX on the CPU cannot build refittable engines (its Myelin compiler needs CUDA there): the flag
    is set, and the build fails with TensorRT's reason, not ours."""
    build = Build(models.deep_residual(3), isolation="thread", history=False, resources=False, **options).start()
    status = build.wait(180)
    (config,) = spy.configs
    assert set(flags) <= set(config["flags"])
    assert status == "succeeded" or "TensorRT could not build an engine" in build.status_detail


def test_tactic_sources_change_the_mask_from_tensorrts_default(spy: Spy) -> None:
    built(models.deep_residual(3), tactic_sources="-JIT_CONVOLUTIONS,+EDGE_MASK_CONVOLUTIONS")
    fresh = int(spy.builders[0].create_builder_config().get_tactic_sources())
    jit, edge = (1 << int(getattr(spy.real.TacticSource, n)) for n in ("JIT_CONVOLUTIONS", "EDGE_MASK_CONVOLUTIONS"))
    assert [c["tactic_sources"] for c in spy.configs] == [(fresh | edge) & ~jit]


def test_several_profiles_reach_the_config(spy: Spy) -> None:
    second = ((6, 8, 8, 8), (8, 8, 8, 8), (12, 8, 8, 8))
    built(models.deep_residual(3, batch="N"), profiles=[{"input": PROFILE}, {"input": second}])
    (config,) = spy.configs
    assert config["num_profiles"] == 2
    assert config["profiles"] == [{"input": PROFILE}, {"input": second}]


def test_dla_and_device_are_refused_where_the_machine_has_none(spy: Spy) -> None:
    """No DLA cores and no CUDA device here: the build fails naming the option and what the machine has."""
    build = Build(models.deep_residual(3), isolation="thread", history=False, dla_core=0, gpu_fallback=True).start()
    assert build.wait(60) == "failed" and "dla_core=0: this device has 0 DLA core(s)" in build.status_detail
    build = Build(models.deep_residual(3), isolation="thread", history=False, device=0).start()
    assert build.wait(60) == "failed" and build.status_detail.startswith("device=0: ")


@pytest.mark.parametrize(
    "options, flags",
    [
        ({"fp16": True}, ["FP16"]),
        ({"bf16": True}, ["BF16"]),
        ({"int8": True}, ["INT8"]),
        ({"fp8": True}, ["FP8"]),
        ({"best": True}, ["FP16", "INT8", "BF16"]),  # as trtexec --best (sampleOptions.cpp, v10.16)
        ({"fp16": True, "int8": True}, ["FP16", "INT8"]),
    ],
)
def test_precision_flags_reach_the_config_where_the_api_has_them(
    spy: Spy, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], flags: list[str]
) -> None:
    """A fake of exactly NVIDIA TensorRT 10.x's extra API (the precision flags RTX lacks): the flags reach the
    config, the network is created weakly typed (as trtexec), and without asking for strongly_typed=False."""
    from trt_widget import _backend

    spy.nvidia_only()
    monkeypatch.setattr(_backend, "select_backend", lambda: ("tensorrt", spy))
    bit = 1 << int(spy.real.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    built(models.deep_residual(3), **options)
    assert spy.fake_flags == flags
    assert [bool(f & bit) for f in spy.network_flags] == [False]


def test_nvidia_tactic_sources_reach_the_config_where_the_api_has_them(
    spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trt_widget import _backend

    spy.nvidia_only()
    monkeypatch.setattr(_backend, "select_backend", lambda: ("tensorrt", spy))
    built(models.deep_residual(3), tactic_sources="-CUDNN,+CUBLAS,-cublasLt")
    fresh = int(spy.builders[0].create_builder_config().get_tactic_sources())
    assert spy.tactic_masks == [(fresh | 1 << 0) & ~(1 << 2) & ~(1 << 1)]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"fp16": True}, r"fp16=True is not available with TensorRT for RTX .*no BuilderFlag.FP16"),
        ({"int8": True}, r"int8=True is not available .*no BuilderFlag.INT8"),
        ({"bf16": True}, r"bf16=True is not available .*no BuilderFlag.BF16"),
        ({"fp8": True}, r"fp8=True is not available .*no BuilderFlag.FP8"),
        ({"best": True}, r"best=True is not available .*no BuilderFlag.FP16"),
        ({"tactic_sources": "-CUDNN"}, r"tactic_sources: CUDNN is not a tactic source of TensorRT for RTX .*it has "),
        ({"strongly_typed": False}, "builds strongly typed networks only"),
    ],
)
def test_what_tensorrt_for_rtx_lacks_is_refused_at_construction(options: dict[str, Any], message: str) -> None:
    if select_backend()[0] != "rtx":
        pytest.skip("TensorRT for RTX's API")
    with pytest.raises(ValueError, match=message):
        Build(models.deep_residual(3), isolation="thread", history=False, **options)


def test_a_setting_missing_from_the_api_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, spy: Spy) -> None:
    """An older API without max_num_tactics (it came in 10.x) or a hardware-compatibility enum: refused by asking
    the API, never by version."""
    from trt_widget import _backend

    class OlderConfig:
        def __getattr__(self, name: str) -> Any:
            if name == "max_num_tactics":
                raise AttributeError(name)
            return getattr(spy.real.IBuilderConfig, name)

    monkeypatch.setattr(spy, "IBuilderConfig", OlderConfig())
    monkeypatch.setattr(_backend, "select_backend", lambda: ("rtx", spy))
    with pytest.raises(
        ValueError, match=r"max_tactics=3 is not available with .*its builder config has no max_num_tactics"
    ):
        Build(models.deep_residual(3), isolation="thread", history=False, max_tactics=3)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"tactic_sources": "CUDNN"}, r"prefix each source with \+ \(enable\) or - \(disable\)"),
        ({"tactic_sources": "+CUDNN,-CUDNN"}, "enables and disables CUDNN"),
        ({"hardware_compatibility": "volta"}, "hardware_compatibility must be one of none, ampere_plus"),
        ({"max_aux_streams": -1}, "max_aux_streams must be an integer from 0 to 32"),
        ({"gpu_fallback": True}, "gpu_fallback=True needs dla_core="),
        ({"exclude_lean_runtime": True}, "needs version_compatible=True"),
        ({"configure": "not a function"}, "configure must be a function"),
        ({"refit": "yes"}, "refit must be True or False"),
        (
            {"profiles": [{"input": PROFILE}, {"other": PROFILE}]},
            "every optimization profile must name the same inputs",
        ),
    ],
)
def test_bad_values_of_the_trtexec_settings_are_refused_before_anything_runs(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        BuildOptions.from_kwargs(**options)


def test_the_not_a_cache_note_stays_a_warning_while_rtxs_timing_cache_lines_are_expected() -> None:
    from trt_widget._expected import expected_reason

    ours = "timing_cache: notes.txt is not a TensorRT timing cache (it does not begin as one does); building ..."
    assert expected_reason(ours, cancelled=False, backend="rtx") is None
    ignored = f"{RTX_TIMING_CACHE}; t.cache is neither read nor written (it speeds up NVIDIA TensorRT builds)"
    assert expected_reason(ignored, cancelled=False, backend="rtx") is not None
    theirs = "Failed to deserialize timing cache. Returning an empty timing cache."
    assert expected_reason(theirs, cancelled=False, backend="rtx") is not None
    assert expected_reason(theirs, cancelled=False, backend="tensorrt") is None
