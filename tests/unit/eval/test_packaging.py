"""The distribution installs one import name (memharness) and every code and config folder."""

from __future__ import annotations

import tomllib

from paths import ROOT


def test_every_code_and_config_folder_is_a_listed_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(project["tool"]["setuptools"]["packages"])
    mapping = project["tool"]["setuptools"]["package-dir"]
    assert all(name.startswith("memharness.") for name in listed)
    expected = set()
    for package, folder in mapping.items():
        base = ROOT / folder
        for d in [base, *[p for p in base.rglob("*") if p.is_dir()]]:
            if "__pycache__" in d.parts:
                continue
            if (d / "__init__.py").exists() or (folder == "conf" and any(d.glob("*.yaml"))):
                expected.add(".".join([package, *d.relative_to(base).parts]))
    assert expected - listed == set(), (
        f"add these to [tool.setuptools] packages: {sorted(expected - listed)}"
    )
