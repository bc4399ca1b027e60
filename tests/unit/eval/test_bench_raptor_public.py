"""bench raptor_public without the public code: it says so instead of measuring, and a wrong path
is one clear error."""

from __future__ import annotations

import pytest
from memharness.eval.bench import raptor_public


def test_without_raptor_src_nothing_is_measured_and_the_reason_is_printed(monkeypatch, capsys):
    monkeypatch.delenv("RAPTOR_SRC", raising=False)
    assert raptor_public.main() == {"measured": 0}
    assert "not measured: RAPTOR_SRC unset" in capsys.readouterr().out


def test_a_raptor_src_that_is_no_file_is_refused_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv("RAPTOR_SRC", str(tmp_path / "cluster_utils.py"))
    with pytest.raises(SystemExit, match="RAPTOR_SRC=.*cluster_utils.py: no such file"):
        raptor_public.main()
