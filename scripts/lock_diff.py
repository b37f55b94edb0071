"""Say what changed between two folders of lock files: `python scripts/lock_diff.py OLD_DIR NEW_DIR`.

Prints one line per package whose pin was added, removed or moved, per lock file, and a summary; the output is
what a maintainer pastes into the commit that lands an upgrade.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from interviewer.doctor import read_pins


def diff(old: dict[str, str], new: dict[str, str]) -> list[str]:
    lines = []
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        if a is None:
            lines.append(f"  + {name} {b}")
        elif b is None:
            lines.append(f"  - {name} {a}")
        else:
            lines.append(f"  ~ {name} {a} -> {b}")
    return lines


def main(old_dir: Path, new_dir: Path) -> int:
    changed = 0
    for lock in sorted(new_dir.glob("*.txt")):
        before = old_dir / lock.name
        lines = diff(read_pins(before) if before.is_file() else {}, read_pins(lock))
        if lines:
            changed += len(lines)
            print(f"{lock.name}:")
            print("\n".join(lines))
    print(f"{changed} pin(s) changed" if changed else "no pin changed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
