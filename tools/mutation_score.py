"""Print the mutation score per module from mutmut's results in mutants/ (after a run).

The score is detected / generated mutants per module (a mutant not checked counts against it).
Detected = killed (a test failed) + timeout (a test hung past mutmut's CPU limit: also a
failure). Survived, "no tests" (no selected test reaches the function), "runner error" and
anything else count against the score. mutmut 3.8 files a worker whose pytest run raised (exit
255, e.g. pytest exit 4 "not found" for a test ID) under "timeout" although no test ran; here it
is "runner error", not detected. The survivors are listed by name; ``mutmut show NAME`` prints a
mutant's diff.

    python tools/mutation_score.py            # scores, then every undetected mutant by name
    python tools/mutation_score.py --diffs    # ... with the changed lines of each
    python tools/mutation_score.py --grouped  # ... as "function: mutant numbers" (for the docs)
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from mutmut.stats import status_by_exit_code

DETECTED = {"killed", "timeout"}
RUNNER_ERROR = {255, -1}  # the worker's run_tests raised: no verdict (mutmut calls it a timeout)


def status(code: int | None) -> str:
    return "runner error" if code in RUNNER_ERROR else status_by_exit_code[code]


def main(root: Path = Path("mutants"), argv: list[str] | None = None) -> int:
    argv = argv or []
    metas = sorted(root.glob("gatekeeper/**/*.py.meta"))
    if not metas:
        print("no results in mutants/: run tools/mutation.sh first", file=sys.stderr)
        return 2
    total: Counter[str] = Counter()
    left: list[str] = []
    heads = ("mutants", "checked", "detected", "survived", "other", "score")
    print(f"{'module':<34} " + " ".join(f"{h:>8}" for h in heads))
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts = Counter(status(code) for code in codes.values())
        total.update(counts)
        left += [
            key for key, code in codes.items() if code is not None and status(code) not in DETECTED
        ]
        print(_row(str(meta.relative_to(root))[: -len(".meta")], counts))
    if sum(total.values()) == total["not checked"]:
        print("no mutant was checked: did the run fail?", file=sys.stderr)
        return 2
    print(_row("all", total))
    print("statuses:", dict(sorted(total.items())))
    print(f"not detected ({len(left)}):")
    if "--grouped" in argv:
        for function, numbers in grouped(left).items():
            print(f"  {function}: {', '.join(map(str, numbers))}")
        return 0
    for key in sorted(left, key=_order):
        print("  ", key)
        if "--diffs" in argv:
            print(changed_lines(key))
    return 0


def _row(name: str, counts: Counter[str]) -> str:
    """One table row. The score is detected over every generated mutant: one not checked (a run
    stopped early) counts against it like a survivor."""
    generated = sum(counts.values())
    checked = generated - counts["not checked"]
    detected = sum(counts[s] for s in DETECTED)
    other = checked - detected - counts["survived"]
    score = 100 * detected / generated if generated else 0.0
    return (
        f"{name:<34} {generated:>8} {checked:>8} {detected:>8} {counts['survived']:>8} "
        f"{other:>8} {score:>7.1f}%"
    )


def _split(key: str) -> tuple[str, int]:
    """``gatekeeper.m.xǁClsǁf__mutmut_7`` -> (``m.Cls.f``, 7)."""
    name, _, number = key.rpartition("__mutmut_")
    module, _, function = name.rpartition(".")
    function = function.replace("xǁ", "").replace("ǁ", ".").removeprefix("x_")
    return f"{module.removeprefix('gatekeeper.')}.{function}", int(number)


def _order(key: str) -> tuple[str, int]:
    return _split(key)


def grouped(keys: list[str]) -> dict[str, list[int]]:
    by_function: dict[str, list[int]] = defaultdict(list)
    for key in sorted(keys, key=_order):
        function, number = _split(key)
        by_function[function].append(number)
    return dict(by_function)


def changed_lines(key: str) -> str:
    """The removed and added lines of a mutant's diff, indented."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    module = key.rpartition("__mutmut_")[0].rpartition(".")[0]
    path = Path(*module.split(".")).with_suffix(".py")
    diff = get_diff_for_mutant(key, path=path)
    return "\n".join(
        "      " + line.strip() for line in diff.splitlines() if re.match(r"^[-+](?![-+])", line)
    )


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
