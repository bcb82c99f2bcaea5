"""GPU and job (model) catalogs: typed rows loaded from JSON and validated.

The packaged catalogs live in ``hsched_env/data/gpus.json`` and ``hsched_env/data/models.json``
(provenance of every figure: ``hsched_env/data/CATALOG_SOURCES.md``). Users can load their own
files in the same format with :func:`load_gpu_catalog` / :func:`load_model_catalog`; the packaged
files go through exactly the same validation. Models of one's own join the catalog in use
(``get_model``, ``model_catalog``: workloads, the simulator, the environments) through
:func:`use_model_files`, or the environment variable ``HSCHED_MODELS`` (model files separated
by ``os.pathsep``) as it is when this module is imported; ``use_model_files`` sets it, so the
processes this one starts inherit the files (``hsched ... --models FILE`` calls it).

Example:
    >>> from hsched_env.catalog import get_gpu, get_model
    >>> get_gpu("a100-80gb").fp16_tflops
    312.0
    >>> get_model("llama2-70b").kv_heads
    8
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import numbers
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hsched_env.errors import ConfigError, UnknownNameError, show
from hsched_env.files import json_object_no_duplicates, read_text_file

__all__ = [
    "GpuType", "ModelSpec", "gpu_catalog", "get_gpu", "model_catalog", "get_model",
    "load_gpu_catalog", "load_model_catalog", "MAX_BATCH", "MAX_CATALOG_INT",
    "MODELS_ENV", "use_model_files", "model_files_in_use", "model_sources",
]

#: The environment variable naming model catalog files whose models join the packaged ones
#: (``os.pathsep``-separated paths; :func:`use_model_files` sets it).
MODELS_ENV = "HSCHED_MODELS"

ARCHS = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell",
         "cdna2", "cdna3")
FAMILIES = ("cnn", "rnn", "transformer", "rl", "recsys", "gan")
PRECISIONS = ("fp32", "fp16", "bf16")
PARALLELISM = ("dp", "tp", "pp")
#: Architectures without TF32 tensor cores (a catalog row's ``tf32_tflops`` must be 0).
PRE_TF32_ARCHS = ("kepler", "maxwell", "pascal", "volta", "turing")
#: Largest integer accepted in a catalog row (exact in float64; beyond it the cost model's
#: integer arithmetic could overflow).
MAX_CATALOG_INT = 2 ** 53
#: The smallest bandwidth accepted, GB/s (1 MB/s, 8 Mb/s), in the catalog and in clusters:
#: far below any real GPU link, NIC or memory, and far enough from 0 that the cost model's
#: transfer times stay finite (a 1e-320 GB/s link made them overflow to inf, and a job ran
#: for ever at 0 samples/s).
MIN_BW_GBPS = 1e-3
#: Largest batch of a model variant (:func:`model_variant`), samples per iteration.
MAX_BATCH = 1_000_000


@dataclass(frozen=True)
class GpuType:
    """One GPU type (catalog row). Figures are dense per-GPU peaks.

    Attributes:
        name: Canonical display name, e.g. ``"A100-80GB"``.
        aliases: Lowercase alternative spellings accepted by :func:`get_gpu`.
        arch: Architecture, e.g. ``"ampere"``.
        fp16_tflops: Dense fp16/bf16 tensor-core peak, TFLOP/s (fp32 value where no fast fp16).
        fp32_tflops: fp32 peak, TFLOP/s.
        memory_gb: Device memory, vendor GB.
        memory_bw_gbps: Device memory bandwidth, GB/s.
        link: Intra-node GPU-to-GPU link, e.g. ``"NVLink3"`` or ``"PCIe4"``.
        link_bw_gbps: Intra-node GPU-to-GPU bandwidth per GPU, GB/s, both directions summed.
        price_per_gpu_hour_usd: Indicative on-demand price, USD per GPU-hour.
        source: Where the figures come from; unverified ones are flagged.
        notes: Free-form remarks.
        tf32_tflops: Dense TF32 tensor-core peak, TFLOP/s; 0 where the GPU has none (before
            Ampere). Optional in a catalog file (default 0: an Ampere-or-newer row without it
            prices fp32 convolutions at the fp32 peak only).
    """

    name: str
    aliases: tuple[str, ...]
    arch: str
    fp16_tflops: float
    fp32_tflops: float
    memory_gb: float
    memory_bw_gbps: float
    link: str
    link_bw_gbps: float
    price_per_gpu_hour_usd: float
    source: str
    notes: str = ""
    tf32_tflops: float = 0.0

    def peak_tflops(self, precision: str) -> float:
        """Dense peak TFLOP/s for a training precision.

        Args:
            precision: ``"fp32"``, ``"fp16"`` or ``"bf16"``.

        Returns:
            ``fp32_tflops`` for fp32, ``fp16_tflops`` for fp16/bf16.

        Raises:
            UnknownNameError: ``precision`` is none of the above.
        """
        if precision == "fp32":
            return self.fp32_tflops
        if precision in ("fp16", "bf16"):
            return self.fp16_tflops
        raise UnknownNameError("precision", precision, list(PRECISIONS))


@dataclass(frozen=True)
class ModelSpec:
    """One training job type (catalog row). Work is counted in samples; see ``sample``.

    Attributes:
        name: CLI key, lowercase (e.g. ``"llama2-7b"``).
        display: Human-readable name.
        family: One of ``cnn``, ``rnn``, ``transformer``, ``rl``, ``recsys``, ``gan``.
        params: Total parameters.
        layers: Transformer blocks, or weight layers used for pipeline splitting.
        hidden: Hidden width (for non-transformers: a representative feature width).
        ffn: FFN width (0 for non-transformers).
        heads: Attention heads (0 if none).
        kv_heads: Key/value heads (``heads`` unless GQA).
        seq_len: Tokens per sample (0 for non-token models).
        vocab: Vocabulary size (0 if none).
        swiglu: Gated (SwiGLU) MLP with three matrices.
        flash_attention: Attention scores are not stored (drops the ``5·a·s/h`` activation term).
        precision: ``fp32``, ``fp16`` or ``bf16``.
        global_batch: Samples per iteration.
        sample: What one sample is.
        tokens_per_sample: Equals ``seq_len`` (0 for non-token models).
        fwd_flops_per_sample: Forward FLOPs per sample, or None for transformer-shaped models.
        act_bytes_per_sample: Training activation bytes per sample with 4-byte (fp32)
            activations (the cost model halves them for a half-precision model), or None for
            transformer-shaped models.
        bytes_per_param_states: Weights + gradients + optimizer bytes per parameter, no ZeRO.
        parallelism: Allowed parallelism kinds, subset of ``("dp", "tp", "pp")``.
        gavel_job_type: Job-type key in Gavel's ``simulation_throughputs.json``, or None.
        batch_per_replica: ``global_batch`` is per data-parallel replica (Gavel's convention
            for its jobs: weak scaling); otherwise it is the fixed global batch.
        kernels_per_iteration: Estimated GPU kernel launches of one training iteration on one
            GPU (layers × ops per layer, ×3 for the backward pass, + optimizer kernels per
            parameter tensor); 0 for transformer-shaped models, whose launch cost the cost
            model counts per layer and micro-batch.
        source: Citation; derived and unverified figures are flagged.
    """

    name: str
    display: str
    family: str
    params: float
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    seq_len: int
    vocab: int
    swiglu: bool
    flash_attention: bool
    precision: str
    global_batch: int
    sample: str
    tokens_per_sample: int
    fwd_flops_per_sample: float | None
    act_bytes_per_sample: float | None
    bytes_per_param_states: float
    parallelism: tuple[str, ...]
    gavel_job_type: str | None
    batch_per_replica: bool
    kernels_per_iteration: int
    source: str

    @property
    def is_transformer_shaped(self) -> bool:
        """True if the cost model derives FLOPs and activations from the transformer shape."""
        return self.family == "transformer" and self.fwd_flops_per_sample is None

    def allows(self, kind: str) -> bool:
        """Whether parallelism ``kind`` (``"dp"``, ``"tp"`` or ``"pp"``) is allowed.

        Raises:
            UnknownNameError: ``kind`` is not a parallelism kind.
        """
        if kind not in PARALLELISM:
            raise UnknownNameError("parallelism kind", kind, list(PARALLELISM))
        return kind in self.parallelism


# ---------------------------------------------------------------------------------------------
# Row schemas. Type codes: "str" (non-empty), "text" (may be empty), "bool", "int>0", "int>=0",
# "num>0", "num>=0", "gbps" (a bandwidth: a number of at least MIN_BW_GBPS), "list[str]"; a
# trailing "?" allows null.

_GPU_SCHEMA: dict[str, str] = {
    "name": "str", "aliases": "list[str]", "arch": "str", "fp16_tflops": "num>0",
    "fp32_tflops": "num>0", "memory_gb": "num>0", "memory_bw_gbps": "gbps", "link": "str",
    "link_bw_gbps": "gbps", "price_per_gpu_hour_usd": "num>=0", "source": "str", "notes": "text",
    "tf32_tflops": "num>=0",
}
#: Keys a GPU row may leave out, with their defaults.
_GPU_OPTIONAL: dict[str, Any] = {"tf32_tflops": 0.0}
_MODEL_SCHEMA: dict[str, str] = {
    "name": "str", "display": "str", "family": "str", "params": "num>0", "layers": "int>0",
    "hidden": "int>0", "ffn": "int>=0", "heads": "int>=0", "kv_heads": "int>=0",
    "seq_len": "int>=0", "vocab": "int>=0", "swiglu": "bool", "flash_attention": "bool",
    "precision": "str", "global_batch": "int>0", "sample": "str", "tokens_per_sample": "int>=0",
    "fwd_flops_per_sample": "num>0?", "act_bytes_per_sample": "num>0?",
    "bytes_per_param_states": "num>0", "parallelism": "list[str]", "gavel_job_type": "str?",
    "batch_per_replica": "bool", "kernels_per_iteration": "int>=0", "source": "str",
}


def _norm(name: str) -> str:
    """Lookup key: lowercase, without spaces, dashes and underscores."""
    return "".join(ch for ch in name.strip().lower() if ch not in " -_")


def _check_value(value: Any, code: str, err: Callable[[str], ConfigError]) -> Any:
    """Check one JSON value against a type code; return it (numbers as float/int)."""
    if value is None:
        if code.endswith("?"):
            return None
        raise err("must not be null")
    code = code.rstrip("?")
    if code in ("str", "text"):
        if not isinstance(value, str):
            raise err(f"expected a string, got {type(value).__name__}")
        if code == "str" and not value.strip():
            raise err("must not be empty")
        return value
    if code == "bool":
        if not isinstance(value, bool):
            raise err(f"expected true or false, got {show(value)}")
        return value
    if code == "list[str]":
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise err(f"expected a list of non-empty strings, got {show(value)}")
        return tuple(value)
    integer = code.startswith("int")
    allowed = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise err(f"expected {'an integer' if integer else 'a number'}, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise err(f"must be finite, got {show(value)}")
    if code.endswith(">0") and value <= 0:
        raise err(f"must be > 0, got {show(value)}")
    if code.endswith(">=0") and value < 0:
        raise err(f"must be >= 0, got {show(value)}")
    if code == "gbps" and value < MIN_BW_GBPS:
        raise err(f"must be at least {MIN_BW_GBPS:g} GB/s (1 MB/s), got {show(value)}")
    if integer:
        if value > MAX_CATALOG_INT:
            raise err(f"must be at most 2**53, got {show(value)}")
        return value
    try:
        return float(value)
    except OverflowError:
        raise err(f"out of range, got {show(value)}") from None


def _check_row(row: Any, schema: dict[str, str], where: str,
               err: Callable[[str, str], ConfigError],
               optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check keys and value types of one row; return the converted values (``optional``: keys
    the row may leave out, with their defaults)."""
    if not isinstance(row, dict):
        raise err(where, f"expected an object, got {type(row).__name__}")
    optional = optional or {}
    for key in schema:
        if key not in row and key not in optional:
            raise err(f"{where}.{key}", "missing key")
    for key in row:
        if key not in schema:
            raise err(f"{where}.{key}", f"unknown key; valid keys: {', '.join(schema)}")
    return {key: (_check_value(row[key], code, functools.partial(err, f"{where}.{key}"))
                  if key in row else optional[key])
            for key, code in schema.items()}


def _read_rows(text: str, source: str, list_key: str) -> list[Any]:
    """Parse the catalog document and return its row list."""
    if not text.strip():
        raise ConfigError("file is empty", source=source)
    try:
        doc = json.loads(text, object_pairs_hook=json_object_no_duplicates)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", source=source, line=exc.lineno) from None
    except ConfigError as exc:
        raise ConfigError(exc.reason, source=source, field=exc.field) from None
    except ValueError:  # an integer literal beyond Python's digit limit
        raise ConfigError("invalid JSON: an integer has too many digits", source=source) from None
    except RecursionError:
        raise ConfigError("invalid JSON: nested too deeply", source=source) from None
    if not isinstance(doc, dict):
        raise ConfigError(f"expected a JSON object with key '{list_key}'", source=source)
    extra = [k for k in doc if k != list_key and not k.startswith("_")]
    if extra:
        raise ConfigError(f"unknown top-level key (only '{list_key}' and '_'-prefixed comments)",
                          source=source, field=extra[0])
    rows = doc.get(list_key)
    if not isinstance(rows, list) or not rows:
        raise ConfigError("expected a non-empty list", source=source, field=list_key)
    return rows


def _parse_gpus(text: str, source: str) -> dict[str, GpuType]:
    def err(field: str, message: str) -> ConfigError:
        return ConfigError(message, source=source, field=field)

    gpus: dict[str, GpuType] = {}
    owner: dict[str, str] = {}  # normalized name or alias -> canonical name
    seen_aliases: set[str] = set()
    for i, raw in enumerate(_read_rows(text, source, "gpus")):
        where = f"gpus[{i}]"
        v = _check_row(raw, _GPU_SCHEMA, where, err, optional=_GPU_OPTIONAL)
        if v["arch"] not in ARCHS:
            raise err(f"{where}.arch",
                      f"unknown architecture {show(v['arch'])}; valid: {', '.join(ARCHS)}")
        if v["fp16_tflops"] < v["fp32_tflops"]:
            raise err(f"{where}.fp16_tflops", "below fp32_tflops (use the fp32 value when the GPU "
                      "has no fast fp16; columns swapped?)")
        if v["tf32_tflops"] > 0 and v["arch"] in PRE_TF32_ARCHS:
            raise err(f"{where}.tf32_tflops", f"{v['arch']} has no TF32 tensor cores (TF32 "
                      "came with Ampere); use 0 or leave the key out")
        if v["tf32_tflops"] > v["fp16_tflops"]:
            raise err(f"{where}.tf32_tflops", "above fp16_tflops (TF32 tensor cores run at most "
                      "at the fp16 rate; a sparsity figure?)")
        name = v["name"]
        if _norm(name) in owner:
            raise err(f"{where}.name", f"duplicate GPU name {show(name)} (clashes with "
                      f"{show(owner[_norm(name)])})")
        owner[_norm(name)] = name
        for j, alias in enumerate(v["aliases"]):
            field = f"{where}.aliases[{j}]"
            if alias != alias.strip().lower():
                raise err(field, f"alias {show(alias)} must be lowercase without surrounding "
                          f"spaces")
            if alias in seen_aliases or owner.get(_norm(alias), name) != name:
                raise err(field, f"duplicate alias {show(alias)} (already names "
                          f"{owner.get(_norm(alias), name)!r})")
            seen_aliases.add(alias)
            owner[_norm(alias)] = name
        gpus[name] = GpuType(**v)
    return gpus


def _check_model_semantics(m: ModelSpec, fail: Callable[[str, str], None]) -> None:
    """Cross-field rules of a model row; ``fail(key, message)`` raises."""
    if m.name != m.name.strip().lower() or " " in m.name:
        fail("name", f"model name {show(m.name)} must be lowercase without spaces")
    if m.family not in FAMILIES:
        fail("family", f"unknown family {show(m.family)}; valid: {', '.join(FAMILIES)}")
    if m.precision not in PRECISIONS:
        fail("precision", f"unknown precision {show(m.precision)}; valid: {', '.join(PRECISIONS)}")
    bad = [k for k in m.parallelism if k not in PARALLELISM]
    if bad or len(set(m.parallelism)) != len(m.parallelism) or "dp" not in m.parallelism:
        fail("parallelism", f"must be distinct kinds from {', '.join(PARALLELISM)} including "
             f"'dp', got {list(m.parallelism)}")
    if m.kv_heads > m.heads or (m.heads > 0 and (m.kv_heads == 0 or m.heads % m.kv_heads)):
        fail("kv_heads", f"must divide heads ({m.heads}), got {m.kv_heads}")
    if m.tokens_per_sample != m.seq_len:
        fail("tokens_per_sample", f"must equal seq_len ({m.seq_len}), got {m.tokens_per_sample}")
    if m.is_transformer_shaped:
        for key in ("heads", "ffn", "seq_len"):
            if getattr(m, key) == 0:
                fail(key, "must be > 0 for a transformer-shaped model (fwd_flops_per_sample null)")
        if m.hidden % m.heads:
            fail("hidden", f"must be divisible by heads ({m.heads}), got {m.hidden}")
        if m.act_bytes_per_sample is not None:
            fail("act_bytes_per_sample", "must be null when fwd_flops_per_sample is null (the cost "
                 "model derives both from the transformer shape)")
    else:
        for key in ("fwd_flops_per_sample", "act_bytes_per_sample"):
            if getattr(m, key) is None:
                fail(key, f"required for a {m.family} model without a transformer shape")
        for key in ("swiglu", "flash_attention"):
            if getattr(m, key):
                fail(key, "only meaningful for a transformer-shaped model")
        if "tp" in m.parallelism:
            fail("parallelism", "'tp' needs a transformer-shaped model (fwd_flops_per_sample null)")
    if "pp" in m.parallelism and m.layers < 2:
        fail("layers", "'pp' needs at least 2 layers")


def check_model(model: Any, field: str = "model") -> ModelSpec:
    """``model`` if it is a ``ModelSpec`` a catalog file could hold (the loader's field types
    and ranges, and its cross-field rules), else a ``ConfigError`` naming the model and the
    field (``field``: the argument's name, when ``model`` is no ``ModelSpec``). The planner
    and the reference throughput check a spec given to them: one built or changed by hand
    (``dataclasses.replace(spec, layers=0)``) priced 60 times the real model's speed, and a
    ``heads=0`` ended in a ``ZeroDivisionError`` inside the cost model. Each distinct spec is
    checked once."""
    if not isinstance(model, ModelSpec):
        raise ConfigError(f"expected a ModelSpec (hsched_env.catalog.get_model / "
                          f"model_variant), got {show(model)}", field=field)
    try:
        return _checked_model(model)
    except TypeError:                   # an unhashable field (a list for parallelism, ...)
        return _check_model_fields(model)


@functools.lru_cache(maxsize=1024)
def _checked_model(model: ModelSpec) -> ModelSpec:
    return _check_model_fields(model)


def _check_model_fields(model: ModelSpec) -> ModelSpec:
    source = f"model {show(getattr(model, 'name', None))}"

    def err(key: str, message: str) -> ConfigError:
        return ConfigError(message, source=source, field=key)

    row = {f.name: getattr(model, f.name) for f in dataclasses.fields(ModelSpec)}
    if isinstance(row["parallelism"], tuple):
        row["parallelism"] = list(row["parallelism"])     # the file's form
    for key, code in _MODEL_SCHEMA.items():
        value = row[key]
        if isinstance(value, bool) or value is None:
            pass
        elif code.startswith("int") and isinstance(value, numbers.Integral):
            value = int(value)                            # a NumPy integer, say
        elif code.startswith("num") and isinstance(value, numbers.Real):
            value = float(value)
        _check_value(value, code, functools.partial(err, key))

    def fail(key: str, message: str) -> None:
        raise err(key, message)

    _check_model_semantics(model, fail)
    return model


def _parse_models(text: str, source: str) -> dict[str, ModelSpec]:
    def err(field: str, message: str) -> ConfigError:
        return ConfigError(message, source=source, field=field)

    models: dict[str, ModelSpec] = {}
    seen: dict[str, str] = {}
    for i, raw in enumerate(_read_rows(text, source, "models")):
        where = f"models[{i}]"
        model = ModelSpec(**_check_row(raw, _MODEL_SCHEMA, where, err))

        def fail(key: str, message: str, _where: str = where) -> None:
            raise err(f"{_where}.{key}", message)

        _check_model_semantics(model, fail)
        if "@" in model.name:
            # ``model_variant`` names a batch variant ``<name>@bs<batch>``: a catalog model
            # named so took a variant's name (a resnet50 job with batch 32 and a job of that
            # model read alike)
            fail("name", f"model name {show(model.name)} must not contain '@' (a job's "
                         f"model with another batch is named <model>@bs<batch>)")
        if _norm(model.name) in seen:
            raise err(f"{where}.name", f"duplicate model name {show(model.name)} (clashes with "
                      f"{show(seen[_norm(model.name)])})")
        seen[_norm(model.name)] = model.name
        models[model.name] = model
    return models


def _read_file(path: str | os.PathLike[str]) -> str:
    return read_text_file(path)


def _packaged(filename: str) -> tuple[str, str]:
    text = resources.files("hsched_env").joinpath("data", filename).read_text(encoding="utf-8")
    return text, f"hsched_env/data/{filename}"


def load_gpu_catalog(path: str | os.PathLike[str]) -> dict[str, GpuType]:
    """Load and validate a GPU catalog file (same format as the packaged ``gpus.json``).

    Args:
        path: JSON file ``{"gpus": [row, ...]}``; keys starting with ``_`` are comments.

    Returns:
        Canonical name -> :class:`GpuType`, in file order.

    Raises:
        ConfigError: The file is unreadable, not UTF-8, empty, not JSON (also: nested too
            deeply, an integer with too many digits, a key repeated in one object), or a row
            is invalid (missing or unknown key, wrong type, NaN/inf, non-positive figure, an
            integer above 2**53, duplicate name or alias). The error names the file and the
            field, e.g. ``gpus[3].memory_gb``.
    """
    return _parse_gpus(_read_file(path), os.fspath(path))


def load_model_catalog(path: str | os.PathLike[str]) -> dict[str, ModelSpec]:
    """Load and validate a model catalog file (same format as the packaged ``models.json``).

    Args:
        path: JSON file ``{"models": [row, ...]}``; keys starting with ``_`` are comments.

    Returns:
        Model name -> :class:`ModelSpec`, in file order.

    Raises:
        ConfigError: As :func:`load_gpu_catalog`, with fields like ``models[5].layers``; also
            cross-field rules (e.g. a CNN without ``fwd_flops_per_sample``).
    """
    return _parse_models(_read_file(path), os.fspath(path))


@functools.lru_cache(maxsize=None)
def _packaged_gpus() -> tuple[GpuType, ...]:
    return tuple(_parse_gpus(*_packaged("gpus.json")).values())


@functools.lru_cache(maxsize=None)
def _packaged_models() -> tuple[ModelSpec, ...]:
    return tuple(_parse_models(*_packaged("models.json")).values())


#: ``HSCHED_MODELS`` as this process read it at import, and as ``use_model_files`` sets it
#: since (read once: a lookup of the environment for every job made loading 15% slower).
_files_in_use = [os.pathsep.join(os.path.realpath(f) for f in
                                 os.environ.get(MODELS_ENV, "").split(os.pathsep) if f.strip())]


def model_files_in_use() -> str:
    """The model files in use (``HSCHED_MODELS`` at import, or as ``use_model_files`` set
    it; ``""``: the packaged models only): the key of what the catalog in use holds, for
    caches of lookups in it."""
    return _files_in_use[0]


@functools.lru_cache(maxsize=16)
def _catalog_with(files: str) -> tuple[tuple[ModelSpec, ...], dict[str, str]]:
    """The packaged models, then those of each file of ``files`` (``HSCHED_MODELS``'s
    value), and the file each of the latter came from (by its name as written and as the
    catalog matches it); a name or Gavel job type given twice (in the packaged catalog or
    another file) is refused."""
    models = list(_packaged_models())
    packaged = "the packaged catalog (hsched models)"
    where = {_norm(m.name): packaged for m in models}
    # a Gavel job type (its name without the batch, for the batched ones) reads one model:
    # a second would take the traces' jobs of that type over silently
    job_types = {_gavel_type_family(m.gavel_job_type): (m.name, packaged) for m in models
                 if m.gavel_job_type}
    sources: dict[str, str] = {}
    for path in (f for f in files.split(os.pathsep) if f.strip()):
        # (the file and its row named, as its other errors are: these named HSCHED_MODELS,
        # also for a file given with --models or use_model_files)
        for i, model in enumerate(load_model_catalog(path).values()):
            held = where.get(_norm(model.name))
            if held is not None:
                raise ConfigError(f"model {model.name!r} of {path} is already in {held}: "
                                  f"give yours another name", source=path,
                                  field=f"models[{i}].name")
            family = model.gavel_job_type and _gavel_type_family(model.gavel_job_type)
            if family in job_types:
                other, held = job_types[family]
                raise ConfigError(f"model {model.name!r} of {path}: Gavel job type "
                                  f"{model.gavel_job_type!r} already reads model {other!r} "
                                  f"(in {held}): give yours none (null) or another",
                                  source=path, field=f"models[{i}].gavel_job_type")
            where[_norm(model.name)] = sources[model.name] = sources[_norm(model.name)] = path
            if family:
                job_types[family] = (model.name, path)
            models.append(model)
    return tuple(models), sources


def _gavel_type_family(job_type: str) -> str:
    """A Gavel job type without its batch (``"ResNet-50"`` of ``"ResNet-50 (batch size
    64)"``): the batched types of one model differ only there."""
    return job_type.split(" (batch size ")[0]


def model_sources() -> dict[str, str]:
    """The models of one's own in use (``HSCHED_MODELS``), by name (as written, and as the
    catalog matches it: case, spaces, dashes and underscores ignored) -> the file each came
    from; ``{}`` with the packaged models only."""
    files = model_files_in_use()
    return dict(_catalog_with(files)[1]) if files else {}


def _models_in_use() -> tuple[ModelSpec, ...]:
    files = model_files_in_use()
    return _catalog_with(files)[0] if files else _packaged_models()


def use_model_files(paths) -> tuple[str, ...]:
    """Add the models of the catalog files ``paths`` (the format of ``models.json``:
    ``load_model_catalog``) to the catalog in use, in this process and the processes it
    starts (``HSCHED_MODELS``, absolute paths); the files are read and checked now (once a
    process: an edit of a file in use is not seen until the next), and a model name or
    Gavel job type that is already in use is refused (``ConfigError``). Returns the files
    in use."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    current = [f for f in model_files_in_use().split(os.pathsep) if f.strip()]
    # one spelling a file (``a.json``, ``./a.json``, a link to it): given twice, used once
    files = list(dict.fromkeys(os.path.realpath(os.fspath(p)) for p in [*current, *paths]))
    value = os.pathsep.join(files)
    _catalog_with(value)                         # a bad file: refused before it is in use
    os.environ[MODELS_ENV] = _files_in_use[0] = value
    return tuple(files)


@functools.lru_cache(maxsize=None)
def _packaged_gpu_index() -> dict[str, GpuType]:
    return _gpu_index({g.name: g for g in _packaged_gpus()})


def _catalog_entries(catalog: Any, kind: type) -> tuple:
    """A catalog's entries (``load_gpu_catalog`` / ``load_model_catalog``'s mapping of name
    to ``kind``), or a ``ConfigError`` naming ``catalog``."""
    entries = tuple(catalog.values()) if isinstance(catalog, Mapping) else None
    if entries is None or not all(isinstance(e, kind) for e in entries):
        raise ConfigError(f"a catalog is a mapping of name to {kind.__name__} (as "
                          f"load_{'gpu' if kind is GpuType else 'model'}_catalog returns), "
                          f"got {show(catalog)}", field="catalog")
    return entries


def _gpu_index(catalog: Mapping[str, GpuType]) -> dict[str, GpuType]:
    index: dict[str, GpuType] = {}
    for gpu in _catalog_entries(catalog, GpuType):
        for key in (gpu.name, *gpu.aliases):
            index[_norm(key)] = gpu
    return index


def gpu_catalog() -> dict[str, GpuType]:
    """The packaged GPU catalog: canonical name -> :class:`GpuType`, in file order.

    The file is parsed once (cached); each call returns a new dict, so callers may modify it.
    """
    return {g.name: g for g in _packaged_gpus()}


def model_catalog() -> dict[str, ModelSpec]:
    """The model catalog in use: name -> :class:`ModelSpec`, the packaged models in file
    order (parsed once), then those of ``HSCHED_MODELS``' files (:func:`use_model_files`)."""
    return {m.name: m for m in _models_in_use()}


def get_gpu(name: str, catalog: Mapping[str, GpuType] | None = None) -> GpuType:
    """Look up a GPU type by canonical name or alias.

    Matching ignores case, spaces, dashes and underscores (``"A100_80GB"`` = ``"a100-80gb"``).

    Args:
        name: Canonical name (``"A100-80GB"``) or alias (``"a100-80"``, ``"v100"``, ``"h100"``).
        catalog: A catalog from :func:`load_gpu_catalog`; default the packaged one.

    Raises:
        UnknownNameError: No such GPU type; the message lists the canonical names.
        ConfigError: ``catalog`` is no mapping of name to ``GpuType``.
    """
    index = _packaged_gpu_index() if catalog is None else _gpu_index(catalog)
    gpu = index.get(_norm(name)) if isinstance(name, str) else None
    if gpu is None:
        names = [g.name for g in (_packaged_gpus() if catalog is None else catalog.values())]
        raise UnknownNameError("GPU type", str(name), names)
    return gpu


def model_variant(name: str | ModelSpec, batch: int | None = None) -> ModelSpec:
    """A catalog model, optionally at another batch size (e.g. one of Gavel's job types).

    Args:
        name: Catalog name or a ``ModelSpec``.
        batch: Samples per iteration (per replica for ``batch_per_replica`` models); ``None``
            keeps the catalog's. Gavel's job-type key follows the batch
            (``"ResNet-50 (batch size 16)"``).

    Raises:
        ConfigError: ``batch`` is not an integer between 1 and :data:`MAX_BATCH`.
    """
    spec = name if isinstance(name, ModelSpec) else get_model(name)
    if batch is None or batch == spec.global_batch:
        return spec
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 < batch <= MAX_BATCH:
        raise ConfigError(f"batch must be an integer between 1 and {MAX_BATCH}, got "
                          f"{show(batch)}", field="batch")
    job_type = spec.gavel_job_type
    if job_type and " (batch size " in job_type:
        job_type = job_type.split(" (batch size ")[0] + f" (batch size {batch})"
    return dataclasses.replace(spec, global_batch=batch, gavel_job_type=job_type,
                               name=f"{spec.name}@bs{batch}")


def get_model(name: str, catalog: Mapping[str, ModelSpec] | None = None) -> ModelSpec:
    """Look up a model by its CLI name (ignoring case, spaces, dashes and underscores).

    Args:
        name: E.g. ``"resnet50"``, ``"ResNet-50"``, ``"llama2_70b"``.
        catalog: A catalog from :func:`load_model_catalog`; default the one in use (the
            packaged models and ``HSCHED_MODELS``', :func:`model_catalog`).

    Raises:
        UnknownNameError: No such model; the message lists the valid names.
        ConfigError: ``catalog`` is no mapping of name to ``ModelSpec``.
    """
    models = _models_in_use() if catalog is None else _catalog_entries(catalog, ModelSpec)
    if isinstance(name, str):
        for model in models:
            if _norm(model.name) == _norm(name):
                return model
    raise UnknownNameError("model", str(name), [m.name for m in models])
