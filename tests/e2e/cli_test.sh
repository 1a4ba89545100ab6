#!/usr/bin/env bash
# End-to-end tests of the hftrain binary's CLI: exit codes, messages, and that bad input never
# crashes or loses files. Usage: cli_test.sh path/to/hftrain   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"

# --- version and help
run 0 --version && has "hftrain 0.1.0" out && has "LibTorch 2.11" out && has "CUDA: " out && has "devices: cpu" out
run 0 --help && has "config" out && has "recipes" out
for verb in config recipes "recipes ls" "recipes cat" "recipes cp"; do
  # shellcheck disable=SC2086
  run 0 $verb --help
done
run 2 && has "subcommand" err
run 2 frobnicate
run 2 config --bogus-flag

# --- config: resolution, shipped names, overrides, provenance, JSON, schema
run 0 config "$SRC/recipes/quickstart.yaml" && has "name: quickstart" out
run 0 config quickstart optimizer.lr=2e-3 '+run.tags.team=nlp' --provenance
has "lr: 0.002  # command line \`optimizer.lr=2e-3\`" out
has "team: nlp  # command line" out
has "quickstart.yaml:" out
run 0 config quickstart --json --provenance
echo "$out" | check_py config-json quickstart && ok || fail "--json is not the expected JSON"
HFTRAIN__OPTIMIZER__LR=0.25 run 0 config quickstart --provenance && has "lr: 0.25  # environment HFTRAIN__OPTIMIZER__LR" out
run 0 config --schema && has "optimizer.lr" out && has "distributed.strategy" out
run 0 config --schema --json
run 0 config --schema --markdown && has "| \`trainer.max_steps\` |" out

# --- bad input: every case exits 2 with one clear message naming the place
printf 'trainer:\n  max_stepz: 10\n' > typo.yaml
run 2 config typo.yaml && has "typo.yaml:2:3: unknown key \`trainer.max_stepz\`" err && has "did you mean \`trainer.max_steps\`?" err
run 2 config quickstart optimizer.lrr=1 && has "did you mean \`optimizer.lr\`?" err
run 2 config quickstart =3 && has "no key" err
run 2 config quickstart a..b=1 && has "malformed key" err
run 2 config quickstart '~' && has "no key" err
run 2 config quickstart trainer.max_steps=abc && has "expects an integer" err
run 2 config && has "needs a RECIPE" err
run 2 evaluate && has "model" err
mkdir evalmodel && printf '{}' > evalmodel/adapter_config.json
run 2 evaluate evalmodel quickstart && has "holds LoRA adapters" err
run 2 config nonexistent.yaml && has "not found" err
mkdir adir
run 2 config adir && has "is a directory" err
: > empty.yaml
run 2 config empty.yaml && has "is empty" err
head -c 4096 /dev/urandom > garbage.yaml
run 2 config garbage.yaml && has "garbage.yaml" err
printf 'trainer: [1, 2\n' > syntax.yaml
run 2 config syntax.yaml && has "syntax.yaml:" err && has "YAML syntax error" err
printf 'trainer:\n\tmax_steps: 3\n' > tabs.yaml
run 2 config tabs.yaml && has "tabs.yaml:2: tab character in indentation" err
printf 'trainer:\n  max_steps: 3\n  max_steps: 4\n' > dup.yaml
run 2 config dup.yaml && has "duplicate key 'max_steps'" err
python3 -c 'print("a: " + "[" * 10000)' > deep.yaml
run 2 config deep.yaml && has "deep.yaml" err
python3 -c 'print("a:\n" + "".join("  " * i + "k:\n" for i in range(1, 3000)))' > deepblock.yaml
run 2 config deepblock.yaml && has "deepblock.yaml" err
printf 'trainer:\n  max_steps: 123456789012345678901234567890\n' > huge.yaml
run 2 config huge.yaml && has "does not fit in a 64-bit integer" err
printf 'trainer:\n  max_steps: 3\noptimizer:\n  lr: .nan\n' > nan.yaml
run 2 config nan.yaml && has "nan.yaml:4:7" err && has "NaN" err
printf 'defaults: [b]\n' > a.yaml; printf 'defaults: [a]\n' > b.yaml
run 2 config a.yaml && has "cycle" err
if [ "$(id -u)" != 0 ]; then
  printf 'trainer: {max_steps: 1}\n' > locked.yaml; chmod 000 locked.yaml
  run 2 config locked.yaml && has "cannot read" err
fi

# --- recipes ls / cat / cp, and cp never overwrites by accident
run 0 recipes ls && has "quickstart" out
run 0 recipes cat quickstart && has "trainer:" out
run 2 recipes cat nosuch && has "no shipped recipe named" err
run 0 recipes cp quickstart mine.yaml
cmp -s mine.yaml "$SRC/recipes/quickstart.yaml" && ok || fail "recipes cp did not copy"
echo "# my edits" > mine.yaml
run 2 recipes cp quickstart mine.yaml && has "already exists" err
grep -q "my edits" mine.yaml && ok || fail "refused cp still changed the file"
run 0 recipes cp quickstart mine.yaml --force
run 2 recipes cp quickstart nodir/x.yaml && has "does not exist" err

# --- resume and verify: bad paths and contradictory flags (tests/e2e/resume_test.sh does the rest)
run 2 resume && has "path" err
run 2 resume nowhere && has "nowhere" err && has "not a directory" err
mkdir -p emptyrun
run 2 resume emptyrun && has "holds no checkpoint-N" err
run 2 verify nowhere && has "nowhere" err
run 2 verify emptyrun && has "holds no checkpoint-N" err
mkdir -p emptyrun/checkpoint-5
run 2 verify emptyrun/checkpoint-5 && has "manifest.json" out
run 2 resume emptyrun/checkpoint-5 && has "does not verify" err
run 2 resume emptyrun notanoverride && has "not an override" err
run 2 run quickstart --resume --overwrite && has "contradict" err

# A bad tuning variable stops the run while it is built, before its first step.
for i in $(seq 1 100); do printf 'The cat sat on the mat number %d.\n' "$i"; done > env-corpus.txt
export HFTRAIN_LM_HEAD_CHUNK_ROWS=many
run 2 run quickstart "data.train=[$WORK/env-corpus.txt]" run.output_dir="$WORK/envrun" \
  && has "HFTRAIN_LM_HEAD_CHUNK_ROWS='many' is not a positive integer" err
if grep -qs "step 1/" "$WORK/envrun/train.log"; then fail "a step ran before the variable was checked"; else ok; fi
unset HFTRAIN_LM_HEAD_CHUNK_ROWS

finish
