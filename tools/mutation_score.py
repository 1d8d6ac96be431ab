"""Print the mutation score per module from mutmut's results in mutants/ (after a run).

Detected = killed (a test failed) + timeout (a test hung: also a failure). Survived, "no tests"
(no selected test reaches the function) and anything else count against the score. The
survivors are listed by name; ``mutmut show NAME`` prints a mutant's diff.

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


def main(root: Path = Path("mutants"), argv: list[str] | None = None) -> int:
    argv = argv or []
    metas = sorted(root.glob("gatekeeper/**/*.py.meta"))
    if not metas:
        print("no results in mutants/: run tools/mutation.sh first", file=sys.stderr)
        return 2
    total: Counter[str] = Counter()
    left: list[str] = []
    heads = ("mutants", "detected", "survived", "other", "score")
    print(f"{'module':<34} " + " ".join(f"{h:>8}" for h in heads))
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts = Counter(status_by_exit_code[code] for code in codes.values())
        checked = sum(counts.values()) - counts["not checked"]
        if not checked:
            continue
        detected = sum(counts[s] for s in DETECTED)
        other = checked - detected - counts["survived"]
        module = str(meta.relative_to(root))[: -len(".meta")]
        print(f"{module:<34} {checked:>7} {detected:>8} {counts['survived']:>8} {other:>6} "
              f"{100 * detected / checked:>6.1f}%")
        total.update(counts)
        left += [key for key, code in codes.items()
                 if code is not None and status_by_exit_code[code] not in DETECTED]
    checked = sum(total.values()) - total["not checked"]
    if not checked:
        print("no mutant was checked: did the run fail?", file=sys.stderr)
        return 2
    detected = sum(total[s] for s in DETECTED)
    print(f"{'all':<34} {checked:>7} {detected:>8} {total['survived']:>8} "
          f"{checked - detected - total['survived']:>6} {100 * detected / checked:>6.1f}%")
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
    return "\n".join("      " + line.strip() for line in diff.splitlines()
                     if re.match(r"^[-+](?![-+])", line))


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
