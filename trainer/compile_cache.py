"""torch.compile's on-disk caches on the job's volume: FX graphs, autotuning and generated code
(inductor), compiled GPU kernels (Triton), so a second job of the same shape, a resubmit or a
restart loads what the first compiled. Set through torch's public environment variables before
anything compiles; no torch import here."""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from collections.abc import Callable

from trainer.config import TrainConfig


def compile_cache_dir(cfg: TrainConfig) -> str:
    """--compile-cache-dir, or .compile-cache beside the output dir: on a job's shared volume,
    where the next job of the same shape, a resubmit or a restart finds it."""
    if cfg.compile_cache_dir:
        return os.path.abspath(cfg.compile_cache_dir)
    return os.path.join(os.path.dirname(os.path.abspath(cfg.output_dir)), ".compile-cache")


# The public environment variables torch.compile reads its caches' places and switches from.
COMPILE_CACHE_ENV = {
    "TORCHINDUCTOR_CACHE_DIR": "inductor",  # FX graphs, autotuning, generated code
    "TRITON_CACHE_DIR": "triton",  # compiled GPU kernels
}
COMPILE_CACHE_SWITCHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def use_compile_cache(cache: str, log: Callable[[str], None]) -> None:
    """Point torch.compile's on-disk caches into `cache`; a variable the job sets itself wins."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR") == torch_default_cache_dir():
        # Importing torchvision already wrote inductor's default into the variable: not the job's.
        del os.environ["TORCHINDUCTOR_CACHE_DIR"]
    kept = [name for name in COMPILE_CACHE_ENV if name in os.environ]
    for name, sub in COMPILE_CACHE_ENV.items():
        os.environ.setdefault(name, os.path.join(cache, sub))
    for name, value in COMPILE_CACHE_SWITCHES.items():
        os.environ.setdefault(name, value)
    where = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    log(f"compile cache: {where}" + (f" ({', '.join(kept)} from the environment)" if kept else ""))


def torch_default_cache_dir() -> str:
    """Where inductor caches when TORCHINDUCTOR_CACHE_DIR is unset: torchinductor_<user> in the
    temp dir (its documented default)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return os.path.join(
        tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)
    )


def cache_is_warm(cache: str) -> bool:
    """Whether the cache torch.compile will use holds anything yet."""
    where = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    if where in ("", torch_default_cache_dir()):
        where = os.path.join(cache, "inductor")
    try:
        with os.scandir(where) as entries:
            return any(True for _ in entries)
    except OSError:
        return False
