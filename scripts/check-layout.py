#!/usr/bin/env python3
"""The layout check: stages of lib/ and apps/ include only themselves and the stages below them.

Prints the stage-to-stage include graph (who includes whom, with counts), then fails (exit 1) on any
include that runs up the pipeline or names a folder that is not a stage, and lists the hand-written
files over the line guideline. CONTRIBUTING.md ("Layout") explains the order; change it in both
places together.

    scripts/check-layout.py [--root DIR] [--max-lines N]
"""
import argparse
import os
import re
import sys

# Bottom to top: a stage may include itself and any stage before it, never one after it.
# The multi-process stage counts as five, in the order its sub-folders depend on each other.
STAGE_ORDER = [
    "util",
    "kernels",
    "config",
    "launch",
    "tokenizer",
    "data",
    "model",
    "peft",
    "optim",
    "parallel/comm",
    "parallel/pipeline",
    "parallel/plan",
    "parallel/data_parallel",
    "parallel/tensor",
    "parallel/seam",
    "ckpt",
    "metrics",
    "train",
    "apps",
]
SPLIT_STAGES = {"parallel"}  # stages whose sub-folders are stages of their own
GENERATED_DIR = "generated"  # files below such a folder are generated: no line guideline
GENERATED_MARK = re.compile(r"do not edit", re.IGNORECASE)  # ...or marked so in their first lines
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")


def stage_of(path_parts):
    """The stage of a path inside lib/ ('parallel/comm/world.h' -> 'parallel/comm'), or None."""
    if len(path_parts) < 2:
        return None  # a file at lib/'s top (the precompiled header) belongs to no stage
    if path_parts[0] in SPLIT_STAGES:
        return "/".join(path_parts[:2]) if len(path_parts) >= 3 else path_parts[0]
    return path_parts[0]


def source_files(root):
    for top in ("lib", "apps"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(dirpath, name)


def is_generated(rel_path, text):
    if GENERATED_DIR in rel_path.split(os.sep)[:-1]:
        return True
    return bool(GENERATED_MARK.search("\n".join(text.splitlines()[:5])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--max-lines", type=int, default=400)
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    rank = {stage: i for i, stage in enumerate(STAGE_ORDER)}

    edges = {}  # (from, to) -> count
    problems = []
    long_files = []
    for path in source_files(root):
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)
        here = "apps" if parts[0] == "apps" else stage_of(parts[1:])
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > args.max_lines and not is_generated(rel, text):
            long_files.append((lines, rel))
        if here is None:
            continue
        if here not in rank:
            problems.append(f"{rel}: lib/{here}/ is not a stage; add it to STAGE_ORDER in scripts/check-layout.py "
                            "and to CONTRIBUTING.md's stage order")
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target_parts = m.group(1).split("/")
            if len(target_parts) < 2:
                continue  # "torch_pch.h" and friends
            there = stage_of(target_parts)
            if there not in rank:
                if os.path.exists(os.path.join(root, "lib", target_parts[0])):
                    problems.append(f"{rel}:{number}: includes \"{m.group(1)}\" from lib/{there}/, which is not a stage")
                continue  # not one of ours (a library's own header)
            edges[(here, there)] = edges.get((here, there), 0) + 1
            if rank[there] > rank[here]:
                problems.append(f"{rel}:{number}: {here} includes \"{m.group(1)}\" from {there}, a later stage "
                                f"(order: {' < '.join(STAGE_ORDER)})")

    print("stage include graph (lib/ and apps/; a stage includes itself and the stages below it):")
    for stage in reversed(STAGE_ORDER):
        below = sorted((t for (f, t) in edges if f == stage and t != stage), key=lambda s: -rank[s])
        if below or any(f == stage for (f, _) in edges):
            shown = ", ".join(f"{t} ({edges[(stage, t)]})" for t in below) or "(nothing below)"
            print(f"  {stage:24} -> {shown}")
    if long_files:
        print(f"hand-written files over {args.max_lines} lines (split them by idea):")
        for lines, rel in sorted(long_files, reverse=True):
            print(f"  {lines:6} {rel}")
    else:
        print(f"no hand-written file over {args.max_lines} lines")
    if problems:
        print(f"layout check FAILED, {len(problems)} include(s) against the stage order:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print("layout check passed: every include runs down the stage order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
