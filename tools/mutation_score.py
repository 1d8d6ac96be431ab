"""Print the mutation score per module from mutmut's results in mutants/ (after a run).

Detected = killed (a test failed) + timeout (a test hung: also a failure). Survived, "no tests"
(no selected test reaches the function) and anything else count against the score. The
survivors are listed by name; ``mutmut show NAME`` prints a mutant's diff.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

DETECTED = {"killed", "timeout"}


def main(root: Path = Path("mutants")) -> int:
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
    for key in sorted(left):
        print("  ", key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
