"""The run's verdict: ``metrics.json["outcome"]``, the exit code and the warnings printed at the end.

Exit codes of the ``memharness`` command (also recorded in ``metrics.json["outcome"]``):

- 0: the run finished and failures stayed within ``eval.max_failed_fraction``;
- 2: a user mistake found before the run (a setting, a dataset file, an unwritable path);
- 3: the run was aborted (authentication rejected, call cache unwritable, ``eval.deadline_s``
  reached, ``budget.*`` spent); its folder keeps ``INCOMPLETE.json`` with the reason;
- 4: the run finished but no question was scored, the judge gave no verdict on any answer, or more
  than ``eval.max_failed_fraction`` of the questions failed (a question the judge gave no verdict
  on, its reply unparsed or its call failed, counts as failed); every file is written.
"""

from __future__ import annotations

from typing import Any

EXIT_OK, EXIT_USER_ERROR, EXIT_ABORTED, EXIT_FAILURES = 0, 2, 3, 4
DEFAULT_MAX_FAILED_FRACTION = 0.1


def failed_count(counts: dict[str, int]) -> int:
    """Questions without a score: not scored at all, or scored but the judge gave no verdict (its
    call failed, or its reply did not parse)."""
    return (
        counts["questions"]
        - counts["scored"]
        + counts.get("judge_failed", 0)
        + counts.get("judge_unparsed", 0)
    )


def judge_problem(counts: dict[str, int]) -> str | None:
    """A judge that gave no verdict on any answer it was asked about is a problem whatever
    ``eval.max_failed_fraction`` allows: every judge score of the run is missing."""
    unparsed, failed = counts.get("judge_unparsed", 0), counts.get("judge_failed", 0)
    if counts.get("judge_parsed", 0) or not (unparsed or failed):
        return None
    return (
        f"the judge gave no verdict on any of the {unparsed + failed} answers it was asked about "
        f"({unparsed} replies unparsed, {failed} calls failed): check the judge's model, prompt "
        "and server (judge.*)"
    )


def outcome(metrics: dict[str, Any], cfg: Any, services: Any) -> dict[str, Any]:
    """The run's verdict for ``metrics.json`` and the exit code."""
    counts = metrics["counts"]
    limit = float((cfg.get("eval") or {}).get("max_failed_fraction", DEFAULT_MAX_FAILED_FRACTION))
    failed = failed_count(counts)
    fraction = failed / counts["questions"] if counts["questions"] else 1.0
    deadline = getattr(services, "deadline", None)
    out: dict[str, Any] = {
        "exit_code": EXIT_OK,
        "failed": failed,
        "failed_fraction": round(fraction, 4),
        "max_failed_fraction": limit,
        "incomplete": None,
        "problems": [],
    }
    for stop, status in (
        (deadline, "deadline_exceeded"),
        (getattr(services, "budget", None), "budget_exceeded"),
    ):
        if stop is not None and stop.hit:  # the run was cut short: its folder says why
            out["incomplete"] = (
                f"{stop.describe()}; {counts.get(status, 0)} questions were not run to the end"
            )
            out["problems"].append(out["incomplete"])
            out["exit_code"] = EXIT_ABORTED
    no_verdict = counts.get("judge_unparsed", 0) + counts.get("judge_failed", 0)
    if counts["scored"] == 0:
        out["problems"].append(f"no question was scored ({counts['questions']} questions)")
    elif judge_problem(counts):
        out["problems"].append(judge_problem(counts))
    elif fraction > limit:
        judged = (
            f", {no_verdict} of them without a judge verdict (judge_unparsed "
            f"{counts.get('judge_unparsed', 0)}, judge_failed {counts.get('judge_failed', 0)})"
            if no_verdict
            else ""
        )
        out["problems"].append(
            f"{failed} of {counts['questions']} questions failed ({fraction:.1%}{judged}), more "
            f"than eval.max_failed_fraction={limit:g}"
        )
    if out["exit_code"] == EXIT_OK and out["problems"]:
        out["exit_code"] = EXIT_FAILURES
    return out


def stage_warnings(metrics: dict[str, Any]) -> list[str]:
    """One line per stage with failed, retried or skipped backend calls or prompts cut to fit, plus
    degraded/empty answers."""
    lines = []
    for stage, c in metrics.get("calls", {}).items():
        if stage == "total":
            continue
        parts = [
            f"{c.get(k, 0)} {label}"
            for k, label in (
                ("failures", "LLM calls failed"),
                ("retries", "LLM retries"),
                ("embed_failures", "embedding calls failed"),
                ("embed_retries", "embedding retries"),
                ("embed_invalid", "embedding replies refused (NaN/inf, wrong dimension or count)"),
                ("deadline_skipped", "calls skipped after the deadline"),
                ("budget_skipped", "calls skipped once the budget was spent"),
            )
            if c.get(k)
        ]
        used = metrics.get("intrinsic", {}).get(stage, {})
        if used.get(
            "prompt_cuts"
        ):  # cached replies included: the method read cut prompts either way
            parts.append(
                f"{used['prompt_cuts']} prompts cut to fit the model's context "
                f"({used.get('prompt_tokens_cut', 0)} tokens)"
            )
        if parts:
            lines.append(f"stage {stage}: " + ", ".join(parts))
    counts = metrics.get("counts", {})
    for key, label in (
        ("degraded", "questions answered from a degraded memory"),
        ("partial", "questions answered without some of their own retrieval calls"),
        ("answer_empty", "empty answers (scored wrong, not judged)"),
        ("judge_unparsed", "judge replies without a verdict (counted as failed questions)"),
        ("judge_failed", "judge calls failed (counted as failed questions)"),
    ):
        if counts.get(key):
            lines.append(f"{counts[key]} {label}")
    nulled = (metrics.get("outcome") or {}).get("nonfinite_nulled")
    if nulled:
        lines.append(f"{nulled} NaN or infinite numbers written as null in the run folder")
    return lines
