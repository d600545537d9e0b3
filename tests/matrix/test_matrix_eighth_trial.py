"""Issue 39, eighth newcomer trial: a matrix with a failed variant, as pandas and the widget's Comparison see it
(real RTX builds)."""

from __future__ import annotations

import pytest

from trt_widget import models
from trt_widget.matrix import BuildMatrix

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def ended() -> BuildMatrix:
    """One variant that builds and one TensorRT's options refuse (optimisation level 9)."""
    matrix = BuildMatrix(
        models.deep_residual(3),
        variants={"ok": {"optimization_level": 1}, "bad level": {"optimization_level": 9}},
        history=False,
    ).start()
    assert matrix.wait(120) == "done"
    ok, bad = matrix.builds
    assert ok.status == "succeeded" and ok.engine and bad.status == "failed"
    return matrix


def test_results_keep_integer_columns_whole_beside_a_missing_value(ended: BuildMatrix) -> None:
    """results() showed engine_bytes as 102624652.0 and NaN: every integer column is pandas' nullable Int64."""
    ok = ended.builds[0]
    results = ended.results()
    assert isinstance(results, pd.DataFrame)
    assert str(results["engine_bytes"].dtype) == "Int64" and str(results["build"].dtype) == "Int64"
    assert results["engine_bytes"].iloc[0] == len(ok.engine or b"")
    assert results["engine_bytes"].isna().tolist() == [False, True]
    assert str(len(ok.engine or b"")) in results.to_string() and ".0" not in results["engine_bytes"].to_string()
    compared = ended.compare(0)
    assert isinstance(compared, pd.DataFrame)
    for column in ("build", "engine_bytes", "d_engine_bytes"):
        assert str(compared[column].dtype) == "Int64", column
    assert compared["d_engine_bytes"].tolist()[0] == 0 and compared["d_engine_bytes"].isna().tolist()[1]
    engines = ended.engines()
    assert isinstance(engines, pd.DataFrame)
    for column in ("build", "layers", "weights", "activations", "engine"):
        assert str(engines[column].dtype) == "Int64", column
    assert engines["layers"].iloc[0] > 0 and engines["layers"].isna().tolist()[1]


def test_the_comparison_carries_why_a_build_failed(ended: BuildMatrix) -> None:
    """The widget's Comparison said only "failed after 43 ms": it now gets the reason's first line."""
    ok, bad = ended.comparison()["builds"]
    assert ok["reason"] == ""
    assert bad["reason"].startswith("variant 'bad level' of deep_residual: optimization_level")
    assert "\n" not in bad["reason"] and bad["reason"] == str(ended.builds[1].error).split("\n")[0]
