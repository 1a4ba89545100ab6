#!/usr/bin/env python3
"""The column limit: no line of the hand-written C++ (lib/, apps/, tests/, bench/) is longer than
.clang-format's ColumnLimit (what the code keeps; clang-format wraps to it).

    scripts/check-columns.py [--root DIR] [--fix]

--fix runs clang-format (14 or newer) over the lines that are too long, and only those.
Generated files (below a `generated/` folder, or marked "do not edit" in their first lines) are left out.
Exit 1 listing each line over the limit; 0 when none is.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
GENERATED_MARK = re.compile(r"do not edit", re.IGNORECASE)


def column_limit(root):
    with open(os.path.join(root, ".clang-format"), encoding="utf-8") as f:
        m = re.search(r"^ColumnLimit:\s*(\d+)", f.read(), re.MULTILINE)
    if not m:
        sys.exit(".clang-format has no ColumnLimit")
    return int(m.group(1))


def sources(root):
    for top in ("lib", "apps", "tests", "bench"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            if "generated" in os.path.relpath(dirpath, root).split(os.sep):
                continue
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    yield os.path.join(dirpath, name)


def long_lines(path, limit):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if GENERATED_MARK.search("\n".join(lines[:5])):
        return []
    # Columns as characters (UTF-8 text such as Ψ counts once), as clang-format counts them.
    return [(i, len(line)) for i, line in enumerate(lines, start=1) if len(line) > limit]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--fix", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    limit = column_limit(root)
    found = {path: long_lines(path, limit) for path in sources(root)}
    found = {path: lines for path, lines in found.items() if lines}
    if args.fix and found:
        tool = shutil.which("clang-format") or shutil.which("clang-format-14")
        if not tool:
            sys.exit("--fix needs clang-format (Debian: clang-format)")
        for path, lines in found.items():
            ranges = [f"--lines={n}:{n}" for n, _ in lines]
            subprocess.run([tool, "-i", f"--style=file:{os.path.join(root, '.clang-format')}", *ranges, path], check=True)
        found = {path: long_lines(path, limit) for path in found}
        found = {path: lines for path, lines in found.items() if lines}
    if found:
        count = sum(len(lines) for lines in found.values())
        print(f"column check FAILED: {count} line(s) over {limit} columns (.clang-format's ColumnLimit); "
              "wrap them, or run scripts/check-columns.py --fix", file=sys.stderr)
        for path, lines in sorted(found.items()):
            for number, width in lines:
                print(f"  {os.path.relpath(path, root)}:{number}: {width} columns", file=sys.stderr)
        return 1
    print(f"column check passed: no line over {limit} columns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
