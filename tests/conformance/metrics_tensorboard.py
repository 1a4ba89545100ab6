"""Holds hftrain's TensorBoard event files and metrics.jsonl against the real readers.

Runs tests/metrics/tb_event_writer_main.cpp (the real metrics::Recorder) twice into one run
directory, as a run and its resume, then reads the directory back with TensorBoard's own loaders:
event_file_loader (which checks every TFRecord CRC and parses each record with protobuf) and
EventAccumulator (what `tensorboard --logdir` serves). Also parses every metrics.jsonl line with
Python's json. Exits non-zero with a message on the first mismatch.

    .venv/bin/python tests/conformance/metrics_tensorboard.py build/tests/metrics/metrics_tb_writer
"""
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing import event_accumulator, event_file_loader

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def close(a, b, rel=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def expected_steps(first, count):
    return [(first + i) * 10 for i in range(count)]


def main():
    writer = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="hftrain-tb-") as run_dir:
        # A run of 5 logging steps, then a resume that logs 3 more.
        subprocess.run([writer, run_dir, "1", "5"], check=True)
        subprocess.run([writer, run_dir, "6", "3"], check=True)
        steps = expected_steps(1, 5) + expected_steps(6, 3)
        eval_steps = [s for s in steps if s % 20 == 0]

        files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*.conformance*")))
        check(len(files) == 2, f"expected two event files (run and resume), found {files}")

        # Record level: the loader drops a record whose CRC fails, so the counts check the CRCs;
        # the first event of each file is the version, the second a session start at the first
        # step the file can hold. One event per logging step and per eval.
        runs = [expected_steps(1, 5), expected_steps(6, 3)]
        for path, run_steps in zip(files, runs):
            events = list(event_file_loader.LegacyEventFileLoader(path).Load())
            want = 2 + len(run_steps) + len([s for s in run_steps if s % 20 == 0])
            check(len(events) == want, f"{path}: {len(events)} events, expected {want}")
            check(events[0].file_version == "brain.Event:2", f"{path}: first event is {events[0]}")
            check(events[1].session_log.status == 1 and events[1].step == run_steps[0] - 9,
                  f"{path}: second event is not a session start at {run_steps[0] - 9}: {events[1]}")
            for e in events[1:]:
                check(e.wall_time > 1e9, f"{path}: wall_time {e.wall_time} is not a Unix time")

        # What TensorBoard serves.
        acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        want_tags = {"train/loss", "train/lr", "train/grad_norm", "train/epoch", "train/tokens_seen",
                     "train/tokens_per_s", "train/step_time_ms", "train/data_wait_ms",
                     "train/peak_mem_mb", "train/mfu", "eval/loss", "eval/ppl"}
        check(want_tags <= tags, f"missing tags: {sorted(want_tags - tags)}")

        loss = acc.Scalars("train/loss")
        check([e.step for e in loss] == steps, f"train/loss steps {[e.step for e in loss]} != {steps}")
        for e in loss:
            check(close(e.value, 10.0 / e.step), f"train/loss at {e.step} is {e.value}")
        for e in acc.Scalars("train/lr"):
            check(close(e.value, e.step * 1e-5), f"train/lr at {e.step} is {e.value}")
        for e in acc.Scalars("train/tokens_seen"):
            check(close(e.value, e.step * 2048.0), f"train/tokens_seen at {e.step} is {e.value}")
        flops_per_token = 6 * 1_000_000 + 12 * 2 * 4 * 16 * 128
        for e in acc.Scalars("train/mfu"):
            check(close(e.value, 20480 * flops_per_token / 989.5e12), f"train/mfu at {e.step} is {e.value}")
        ev = acc.Scalars("eval/loss")
        check([e.step for e in ev] == eval_steps, f"eval/loss steps {[e.step for e in ev]}")
        for e in ev:
            check(close(e.value, 5.0 / e.step), f"eval/loss at {e.step} is {e.value}")
        for e in acc.Scalars("eval/ppl"):
            check(close(e.value, math.exp(5.0 / e.step)), f"eval/ppl at {e.step} is {e.value}")

        # metrics.jsonl: every line is JSON; the resume appended.
        with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        train = [r for r in records if r["type"] == "train"]
        evals = [r for r in records if r["type"] == "eval"]
        check([r["step"] for r in train] == steps, f"jsonl train steps {[r['step'] for r in train]}")
        check([r["step"] for r in evals] == eval_steps, f"jsonl eval steps {[r['step'] for r in evals]}")
        required = {"step", "epoch", "loss", "lr", "grad_norm", "tokens_seen", "tokens_per_s",
                    "step_time_ms", "data_wait_ms", "peak_mem_mb", "mfu"}
        for r in train:
            check(required <= r.keys(), f"jsonl record lacks {sorted(required - r.keys())}: {r}")
            check(close(r["loss"], 10.0 / r["step"], 1e-15), f"jsonl loss {r}")
        for r in evals:
            check(close(r["eval_ppl"], math.exp(r["eval_loss"]), 1e-12), f"jsonl eval_ppl {r}")

        # A resume from a checkpoint at step 30 (steps 40..80 logged by the earlier processes never
        # happened now): TensorBoard and metrics.jsonl both drop them and keep the new 40 and 50.
        subprocess.run([writer, run_dir, "4", "2"], check=True)
        resumed = expected_steps(1, 5)
        acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
        acc.Reload()
        got = [e.step for e in acc.Scalars("train/loss")]
        check(got == resumed, f"after a resume from step 30, TensorBoard serves train/loss at {got}, not {resumed}")
        got = [e.step for e in acc.Scalars("eval/loss")]
        check(got == [20, 40], f"after a resume from step 30, TensorBoard serves eval/loss at {got}")
        with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
            got = [json.loads(line)["step"] for line in f]
        check(got == [10, 20, 20, 30, 40, 40, 50], f"after a resume from step 30, metrics.jsonl holds steps {got}")

    if failures:
        for message in failures:
            print("FAIL:", message, file=sys.stderr)
        return 1
    print(f"ok: {len(steps)} steps, {len(eval_steps)} evals read back by tensorboard "
          f"{__import__('tensorboard').__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
