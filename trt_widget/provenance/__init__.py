"""Where an engine came from and whether it is still good: the manifest beside every engine trt_widget writes,
reuse of an engine whose manifest matches, and "will this engine load here?" (docs/manifest.md, docs/reuse.md)."""

from ._bundle import write_bundle
from ._check import EngineCheck, EngineHeader, check_engine, read_engine_header
from ._cli import check_arguments, check_run
from ._hashes import HashCache, Hashed, trusted_owners
from ._inspect import inspect_run, manifest_text
from ._manifest import (
    Manifest,
    ManifestError,
    differences,
    file_sha256,
    identity_of,
    key_of,
    make_manifest,
    manifest_path,
    model_identity,
    read_manifest,
    write_manifest,
)
from ._reuse import cache_entry, copy_into_place, default_reuse_dir, find_reusable, reuse_dir_of

__all__ = [
    "EngineCheck",
    "EngineHeader",
    "HashCache",
    "Hashed",
    "Manifest",
    "ManifestError",
    "cache_entry",
    "check_arguments",
    "check_engine",
    "check_run",
    "copy_into_place",
    "default_reuse_dir",
    "differences",
    "file_sha256",
    "find_reusable",
    "identity_of",
    "inspect_run",
    "key_of",
    "make_manifest",
    "manifest_path",
    "manifest_text",
    "model_identity",
    "read_engine_header",
    "read_manifest",
    "reuse_dir_of",
    "trusted_owners",
    "write_bundle",
    "write_manifest",
]
