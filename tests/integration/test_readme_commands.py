"""Every command shown in README.md, run as written with tiny limits, so the docs cannot drift.

Each command in a ```bash block is classified:
- ``python run.py ...`` / ``memharness ...`` that runs offline: run for real (a subprocess in a scratch
  folder) with the scripted test doubles for the LLM, embedder and judge, one question per dataset, and
  the upstream-schema fixture where the command names a local dataset folder;
- a run that needs the network (OpenAI, vLLM, a Hub download, a placeholder to fill in): composed and
  validated in process, exactly as run.py would before it calls anything;
- ``memharness SUBCOMMAND ...`` (any subcommand but ``run``) and ``python -m memharness...``: run as
  written, after the runs above wrote what it reads;
- ``make T``: ``make -n T`` (the target exists and expands); ``pip install -e '.[x]'``: the extra exists.
An unknown kind of command fails the test, so a new README command must be taught here.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from memharness.eval.cli.command import SUBCOMMANDS
from memharness.eval.run.validate import validate_config
from paths import ROOT

CONF = ROOT / "conf"
TEST_CONF = ROOT / "tests" / "conf"
NETWORK_CHOICES = {"openai", "vllm"}
SWAPPED = ("llm=", "embedder=", "judge=", "judge@judge2=", "dataset.limit=")
FIXTURES = {"multihop": ROOT / "tests" / "fixtures" / "multihop"}


def readme_commands(text: str) -> list[str]:
    """The shell commands of every ```bash block: continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


def split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def run_arguments(words: list[str]) -> list[str] | None:
    """The overrides of a run command (``python run.py ...``, ``memharness run ...`` or
    ``memharness OVERRIDES``), or None when the command is not a run."""
    if words[:2] == ["python", "run.py"] or words[:2] == ["memharness", "run"]:
        return words[2:]
    if words[0] == "memharness" and (len(words) == 1 or words[1] not in SUBCOMMANDS):
        return None if words[1:2] in (["--help"], ["-h"], ["help"]) else words[1:]
    return None


def is_run(command: str) -> bool:
    return run_arguments(split_env(shlex.split(command))[1]) is not None


def needs_network(env: dict[str, str], args: list[str]) -> bool:
    choices = {
        a.split("=", 1)[1]
        for a in args
        if a.split("=", 1)[0] in ("llm", "embedder", "judge", "judge@judge2")
    }
    dataset = next((a.split("=", 1)[1] for a in args if a.startswith("dataset=")), "sample")
    return (
        bool(choices & NETWORK_CHOICES)
        or env.get("HF_HUB_OFFLINE") == "0"
        or any("<" in a for a in args)
        or (dataset != "sample" and dataset not in FIXTURES)
    )


def offline_overrides(args: list[str]) -> list[str]:
    """The user's overrides with the backends swapped for the test doubles and one question each."""
    kept = [a for a in args if not a.startswith(SWAPPED)]
    dataset = next((a.split("=", 1)[1] for a in args if a.startswith("dataset=")), "sample")
    if dataset in FIXTURES:
        kept = [a for a in kept if not a.startswith("dataset.loader.path=")]
        kept.append(f"dataset.loader.path={FIXTURES[dataset]}")
    if any(a.startswith("judge@judge2=") for a in args):
        kept.append("judge@judge2=fake")
    return [
        *kept,
        f"hydra.searchpath=[file://{TEST_CONF}]",
        "llm=fake",
        "embedder=fake",
        "judge=fake",
        "dataset.limit=1",
        "progress=false",
    ]


def compose_and_validate(args: list[str], tmp_path: Path) -> None:
    overrides = [a for a in args if a != "-m"] + [
        f"data_dir={tmp_path / 'data'}",
        f"cache.path={tmp_path / 'c.sqlite'}",
    ]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            config_name="config", overrides=[re.sub(r"<[^>]*>", "x", a) for a in overrides]
        )
    validate_config(cfg)


def sweep_points(args: list[str]) -> list[list[str]]:
    """Each job of a ``-m`` command line (``k=a,b`` lists expanded); the line itself otherwise."""
    if "-m" not in args:
        return [args]
    choices = [
        [f"{a.split('=', 1)[0]}={v}" for v in a.split("=", 1)[1].split(",")]
        if "=" in a and "," in a and not re.search(r"[\[\](){}'\"]", a)
        else [a]
        for a in args
        if a != "-m"
    ]
    return [list(point) for point in itertools.product(*choices)]


def run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 600
) -> subprocess.CompletedProcess:
    full_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT / "tests"),
        "MEMHARNESS_CACHE": str(cwd / "cache.sqlite"),
        "MEMHARNESS_DATA": str(cwd / "data"),
        **env,
    }
    full_env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def check(command: str, work: Path, run_for_real: bool = True) -> str:
    """Run or check one README command; returns how it was checked. ``run_for_real=False``
    composes and validates an offline run command instead of running it."""
    env, words = split_env(shlex.split(command))
    head = words[0]
    if head in (".", "source"):
        assert words[1] == ".venv/bin/activate", command  # the venv the Makefile creates
        return "skipped (activates the venv)"
    if head == "export":
        return "skipped (sets a variable)"
    if head == "make":
        proc = subprocess.run(
            ["make", "-n", words[1]], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, f"{command}: {proc.stderr}"
        return "make -n"
    if head == "pip":
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
        wanted = re.findall(r"\.\[([\w,-]+)\]", command)
        assert wanted and all(e in extras for w in wanted for e in w.split(",")), command
        return "extra exists"
    exe = Path(sys.executable).parent / "memharness"
    if head == "python" and words[1] == "-m":
        proc = run([sys.executable, *words[1:]], work, env)
        assert proc.returncode == 0, f"{command}:\n{proc.stderr[-3000:]}"
        return "ran"
    args = run_arguments(words)
    if head == "memharness" and args is None:  # a subcommand other than run, or --help
        proc = run([str(exe), *words[1:]], work, env)
        assert proc.returncode == 0, f"{command}:\n{proc.stderr[-3000:]}"
        return "ran"
    if args is not None:
        if needs_network(env, args):
            compose_and_validate(args, work)
            return "composed and validated (needs the network)"
        if not run_for_real:
            for point in sweep_points(args):
                compose_and_validate(offline_overrides(point), work)
            return "composed and validated (fast tier)"
        cmd = [str(exe), "run"] if head == "memharness" else [sys.executable, str(work / "run.py")]
        proc = run([*cmd, *offline_overrides(args)], work, env)
        assert proc.returncode == 0, f"{command}:\n{proc.stderr[-3000:]}"
        return "ran with test doubles"
    raise AssertionError(
        f"README command of an unknown kind (teach tests/integration/test_readme_commands.py): {command}"
    )


def test_readme_commands_are_found():
    commands = readme_commands((ROOT / "README.md").read_text())
    assert "make demo" in commands and "make test" in commands
    assert sum(is_run(c) for c in commands) >= 5


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A scratch folder holding a copy of run.py, as a user's checkout would."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "run.py").write_text((ROOT / "run.py").read_text())
    return folder


# The run commands the fast tier runs for real: the first plain run and the runs the README's
# report commands read (a memorystream baseline, a sweep folder); every other run command is
# composed and validated there, and run for real in the slow tier.
FAST_TIER_RUNS = ("memory=memorystream", "memory=full_context,memorystream,memtree")


def runs_for_real_in_the_fast_tier(commands: list[str]) -> set[str]:
    runs = [c for c in commands if is_run(c)]
    return {runs[0]} | {c for c in runs if any(k in c.split() for k in FAST_TIER_RUNS)}


def test_every_readme_command_works(work):
    """Fast tier: every command checked, the report commands run on real runs."""
    commands = readme_commands((ROOT / "README.md").read_text())
    real = runs_for_real_in_the_fast_tier(commands)
    assert len(real) == 3, real
    done = [(c, check(c, work, c in real)) for c in commands]
    print("\n".join(f"{how:45s} {c}" for c, how in done))
    assert sum(how == "ran with test doubles" for _, how in done) == 3
    assert any(how == "composed and validated (fast tier)" for _, how in done)
    assert any(how == "ran" for _, how in done)  # the report commands (memharness report, ...)


@pytest.mark.slow
@pytest.mark.doubles
def test_every_readme_command_runs_for_real(work):
    done = [(c, check(c, work)) for c in readme_commands((ROOT / "README.md").read_text())]
    print("\n".join(f"{how:45s} {c}" for c, how in done))
    assert any(how == "ran with test doubles" for _, how in done)
    assert any(how.startswith("composed") for _, how in done)
    assert not any(how.endswith("(fast tier)") for _, how in done)


@pytest.mark.parametrize(
    "command, kind",
    [
        ("python run.py llm=openai", "composed"),
        ("HF_HUB_OFFLINE=0 python run.py dataset=msc", "composed"),
        ("python run.py memory=nonexistent", "error"),
    ],
)
def test_the_checker_itself_can_fail(work, command, kind):
    if kind == "composed":
        assert check(command, work).startswith("composed")
    else:
        with pytest.raises(AssertionError, match="memory=nonexistent"):
            check(command, work)
    with pytest.raises(AssertionError, match="unknown kind"):
        check("curl http://example.org", work)


def test_readme_table_commands_run_on_a_dataset_their_table_reads():
    """A paper-table experiment shown with dataset=X must run on a dataset the table's cells read,
    else the paper_report command after it can only print 'not run' (dataset=sample did, for Table 4)."""
    from memharness.eval.papers.load import load_all

    datasets: dict[str, set[str]] = {}
    for paper in load_all():
        for table in paper.tables:
            if table.experiment:
                datasets.setdefault(table.experiment, set()).update(
                    d for c in table.columns for d in c.datasets
                )
    checked = 0
    for command in readme_commands((ROOT / "README.md").read_text()):
        words = shlex.split(command)
        exp = next((w.split("=", 1)[1] for w in words if w.startswith("experiment=")), None)
        chosen = next((w.split("=", 1)[1] for w in words if w.startswith("dataset=")), None)
        if exp in datasets and chosen is not None:
            checked += 1
            assert chosen in datasets[exp], (
                f"{command}: {exp}'s tables read {sorted(datasets[exp])}, not {chosen}"
            )
    assert checked >= 1
