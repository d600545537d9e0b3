"""One definition of the build options: the keyword TypedDict, the CLI flags, the service's allowed options and
the remote refusals all follow BuildOptions' fields (and their metadata)."""

from __future__ import annotations

import argparse
import dataclasses
import typing

import pytest

from trt_widget import _cli_options, _http_options, _options
from trt_widget.__main__ import _parser
from trt_widget._http_options import http_options, http_refusals
from trt_widget._options import BuildOptions, BuildOptionsDict, option_fields


def test_the_typeddict_has_exactly_the_fields_of_build_options() -> None:
    names = [f.name for f in dataclasses.fields(BuildOptions)]
    assert list(typing.get_type_hints(BuildOptionsDict)) == names
    assert BuildOptionsDict.__required_keys__ == frozenset()  # every option may be left out


def test_every_field_documents_itself_and_the_cli_has_a_flag_for_each_that_names_one() -> None:
    parser = _parser()
    build = next(a for a in parser._subparsers._actions if isinstance(a, argparse._SubParsersAction))  # type: ignore[union-attr]
    dests = {action.dest: action for action in build.choices["build"]._actions}
    for f in option_fields():
        assert f.metadata["help"], f.name
        if f.metadata.get("flag"):
            assert f.metadata["flag"] in dests[f.name].option_strings
            assert dests[f.name].help == f.metadata["help"]
        elif f.metadata.get("cli", {}).get("shapes"):
            assert {"shapes", "min_shapes", "opt_shapes", "max_shapes"} <= set(dests)
        else:
            assert f.name not in dests, f"{f.name} has a CLI argument but no flag metadata"


def test_the_service_allows_exactly_the_fields_not_refused_over_http() -> None:
    pytest.importorskip("python_multipart")
    from trt_widget.serve import _upload as serve_upload

    names = {f.name for f in dataclasses.fields(BuildOptions)}
    assert set(serve_upload.ALLOWED_OPTIONS) | set(http_refusals()) == names
    assert not set(serve_upload.ALLOWED_OPTIONS) & set(http_refusals())
    assert set(serve_upload.ALLOWED_OPTIONS) == set(http_options())
    for name, why in http_refusals().items():
        assert serve_upload.REFUSED_OPTIONS[name] == why
        with pytest.raises(serve_upload.UploadError, match=f"option '{name}' is not accepted over HTTP"):
            serve_upload.parse_options(f'{{"{name}": null}}')
    # what must never come from a request: files on the server, code, where the builder runs
    assert {"output", "timing_cache", "configure", "isolation", "device"} <= set(http_refusals())


def test_a_remote_build_refuses_what_the_service_refuses_except_the_local_output() -> None:
    from trt_widget.serve._client import _NOT_REMOTE

    assert set(_NOT_REMOTE) >= set(http_refusals()) - {"output"}
    assert "output" not in _NOT_REMOTE


def test_a_plain_new_field_works_in_python_has_no_flag_and_is_refused_over_http(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What code adding a field without metadata gets (a field that is not settable over HTTP until said so)."""

    @dataclasses.dataclass(frozen=True)
    class WithMore(BuildOptions):
        calibration: tuple[str, ...] | None = None

    for module in (_options, _http_options, _cli_options):  # each projection reads the fields of the class
        monkeypatch.setattr(module, "BuildOptions", WithMore)
    assert _http_options.http_refusals()["calibration"] == _http_options.NOT_OVER_HTTP
    assert "calibration" not in _http_options.http_options()
    assert "calibration" in _options.builder_options()
    parser = argparse.ArgumentParser()
    _cli_options.add_option_arguments(parser)
    assert "calibration" not in {a.dest for a in parser._actions}
    options = WithMore.from_kwargs(calibration=("a.cache",))
    assert (
        isinstance(options, WithMore)
        and options.calibration == ("a.cache",)
        and options.summary()["calibration"] == ["a.cache"]
    )


def test_docs_options_page_names_every_option() -> None:
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "options.md").read_text()
    missing = [f.name for f in option_fields() if f"| `{f.name}` |" not in page]
    assert not missing, f"docs/options.md lacks a row for {missing}"
