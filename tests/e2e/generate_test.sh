#!/usr/bin/env bash
# End-to-end tests of `hftrain generate` and `hftrain tokenizer`: exact output of models whose
# predictions are known, seeds, run-directory resolution, and every bad input exiting 2 with a
# clear message and no crash.
# Usage: generate_test.sh path/to/hftrain path/to/hftrain_make_model_dir   (tests/e2e/harness.sh)
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh" "$@"
MAKE_MODEL=$(realpath "${E2E_ARGS[0]:?usage: generate_test.sh path/to/hftrain path/to/hftrain_make_model_dir}")
FORTUNES="$SRC/tests/fixtures/data/fortunes"
make_model() { "$MAKE_MODEL" "$@" || fail "hftrain_make_model_dir $* failed"; }

make_model random --seed 3
make_model llama --arch llama --seed 4
make_model always_a --always 97         # predicts "a" (byte 97) everywhere
make_model always_eot --always 256      # predicts <|endoftext|> everywhere
make_model short --always 98 --max-seq-len 12

# --- help
run 0 generate --help && has "--top-p" out && has "--num-samples" out
run 0 tokenizer --help && has "train" out && has "encode" out
run 0 tokenizer train --help && has "--vocab-size" out

# --- generate: known outputs, stop reasons
run 0 generate always_a --prompt Hello --max-new-tokens 5 --greedy && is "Helloaaaaa"
has "stopped: reached --max-new-tokens" err && has "loaded always_a" err && has "tokenizer byte" err
run 0 generate always_a --prompt Hello --max-new-tokens 3 --temperature 1.5 --top-k 5 --top-p 0.9 && is "Helloaaa"
run 0 generate always_eot --prompt "Hi there" && is "Hi there" && has "end-of-text" err && has "0 new tokens" err
run 0 generate short --prompt 0123456789 --max-new-tokens 64 && is "0123456789bb"
has "reached the model's max_seq_len of 12 tokens" err
run 0 generate short --prompt 012345678901 && is "012345678901" && has "max_seq_len of 12" err
# Special-token text in the prompt is the token itself: 1 token here, not 13 bytes.
run 0 generate always_a --prompt "<|endoftext|>" --max-new-tokens 2 && is "<|endoftext|>aa" && has "1 prompt + 2 new" err

# --- seeds: the same seed gives the same text, another seed another text
run 0 generate random --prompt "The" --max-new-tokens 20 --seed 7 && first=$out
run 0 generate random --prompt "The" --max-new-tokens 20 --seed 7
[ "$out" = "$first" ] && ok || fail "the same seed gave different text"
run 0 generate random --prompt "The" --max-new-tokens 20 --seed 8
[ "$out" != "$first" ] && ok || fail "seeds 7 and 8 gave the same text"
run 0 generate llama --prompt "The" --max-new-tokens 10 --greedy && first=$out
run 0 generate llama --prompt "The" --max-new-tokens 10 --greedy --seed 99
[ "$out" = "$first" ] && ok || fail "greedy decoding depended on the seed"
run 0 generate random --prompt "The" --max-new-tokens 4 --num-samples 3
has "----- sample 3/3 -----" out && has "sample 3/3:" err
[ "$(grep -c 'stopped:' "$WORK/stderr")" = 3 ] && ok || fail "expected 3 stop lines: $err"

# --- run directories: final/ if present, else the highest checkpoint-N (by number)
mkdir run
cp -r always_a run/checkpoint-9
cp -r always_eot run/checkpoint-10
run 0 generate run --prompt Hi --max-new-tokens 3 && is "Hi" && has "run/checkpoint-10" err
cp -r always_a run/final
run 0 generate run --prompt Hi --max-new-tokens 3 && is "Hiaaa" && has "run/final" err

# --- generate: bad input exits 2 with a clear message
run 2 generate nosuch --prompt x && has "nosuch does not exist" err
run 2 generate random && has "--prompt" err
run 2 generate random --prompt "" && has "prompt is empty" err
run 2 generate random --prompt x --temperature -1 && has "--temperature" err
run 2 generate random --prompt x --top-p 0 && has "--top-p is 0, it must be in (0, 1]" err
run 2 generate random --prompt x --top-p 1.5 && has "--top-p" err
run 2 generate random --prompt x --top-k -3 && has "--top-k is -3" err
run 2 generate random --prompt x --max-new-tokens 0 && has "--max-new-tokens" err
run 2 generate random --prompt x --num-samples 0 && has "--num-samples" err
run 2 generate random --prompt x --device tpu && has "--device" err
run 2 generate short --prompt 0123456789abc && has "13 tokens, longer than the model's max_seq_len of 12" err
mkdir empty
run 2 generate empty --prompt x && has "holds no model.json, final/ or checkpoint-N/" err && has "hint:" err
cp -r random broken && rm broken/model.safetensors
run 2 generate broken --prompt x && has "broken/model.safetensors is missing" err
cp -r random truncated && head -c 1000 random/model.safetensors > truncated/model.safetensors
run 2 generate truncated --prompt x && has "truncated/model.safetensors" err
cp -r random badjson && echo '{"format": "hftrain-model", "arch": ' > badjson/model.json
run 2 generate badjson --prompt x && has "badjson/model.json" err
cp -r random wrongshape && sed -i 's/"d_model": 32/"d_model": 64/' wrongshape/model.json
run 2 generate wrongshape --prompt x && has "does not match model.json" err

# --- tokenizer train / encode
python3 -c 'print("the quick brown fox jumps over the lazy dog; Café au lait, déjà vu.\n" * 50)' > corpus.txt
run 0 tokenizer train --data "$FORTUNES/*" --exclude '*.dat' --separator % --data corpus.txt --vocab-size 300 \
  --min-frequency 1 --output tok.json && has "wrote tok.json: vocab size" out && has " s" out
check_py bpe-tokenizer tok.json && ok || fail "tok.json is not a BPE tokenizer.json"
cp tok.json tok.saved
run 2 tokenizer train --data "$FORTUNES/more" --output tok.json && has "already exists" err && has "--force" err
cmp -s tok.json tok.saved && ok || fail "a refused train changed tok.json"
run 0 tokenizer train --data "$FORTUNES/more" --output tok.json --force --vocab-size 260
cmp -s tok.json tok.saved && fail "--force did not overwrite tok.json" || ok
cp tok.saved tok.json
run 0 tokenizer encode --tokenizer tok.json --text "Café au lait" && [[ "$out" =~ ^[0-9]+( [0-9]+)*$ ]] && ok || fail "encode printed '$out'"
[ "$(echo "$out" | wc -w)" -lt 13 ] && ok || fail "no merges were applied: $out"
run 0 tokenizer encode --tokenizer random --text "Hi" && is "72 105"
run 0 tokenizer encode --tokenizer random/tokenizer.json --text "<|endoftext|>" && is "256"
run 0 tokenizer encode --tokenizer random --text "<|endoftext|>" --no-special && [ "$(echo "$out" | wc -w)" = 13 ] && ok || fail "--no-special: $out"
run 2 tokenizer && has "subcommand" err
run 2 tokenizer train --data "nosuch/*" --output t2.json && has "nosuch" err
[ -e t2.json ] && fail "a failed train wrote t2.json" || ok
run 2 tokenizer train --data "$FORTUNES/more" --output t2.json --vocab-size 100 && has "--vocab-size is 100" err
run 2 tokenizer train --data "$FORTUNES/more" --output nodir/t.json && has "does not exist" err
run 2 tokenizer train --data "$FORTUNES/more" --output . && has "is a directory" err
run 2 tokenizer train --output t2.json && has "--data" err
run 2 tokenizer encode --tokenizer nosuch.json --text x && has "nosuch.json does not exist" err
echo '{"hftrain_tokenizer": "wordpiece"}' > odd.json
run 2 tokenizer encode --tokenizer odd.json --text x && has "odd.json: unknown hftrain_tokenizer" err

# --- a BPE model: the tokenizer the verb trained, saved with a model, generates
"$MAKE_MODEL" bpe_model --tokenizer tok.json --arch llama || fail "make bpe_model"
run 0 generate bpe_model --prompt "Café au lait" --max-new-tokens 8 --seed 1 && has "Café au lait" out && has "tokenizer bpe (300 tokens)" err
# A tokenizer larger than the model's vocabulary is refused.
cp -r random mismatch && cp tok.json mismatch/tokenizer.json
run 2 generate mismatch --prompt x && has "has 300 tokens, more than the vocab_size 258" err

# --- export --hf: the Hugging Face layout (tests/conformance/export_roundtrip.py loads it in
# transformers); never replaces a folder unless --force
run 0 export llama --hf llama-hf
has "from_pretrained" out
for f in config.json model.safetensors tokenizer.json tokenizer_config.json generation_config.json; do
  [ -s "llama-hf/$f" ] && ok || fail "export: llama-hf/$f missing"
done
grep -q '"LlamaForCausalLM"' llama-hf/config.json && ok || fail "export: config.json does not name LlamaForCausalLM"
echo keep > llama-hf/mine.txt
run 2 export random --hf llama-hf
has "already exists" err
[ -f llama-hf/mine.txt ] && grep -q LlamaForCausalLM llama-hf/config.json && ok || fail "a refused export changed the folder"
run 0 export random --hf llama-hf --force
grep -q '"GPT2LMHeadModel"' llama-hf/config.json && [ ! -f llama-hf/mine.txt ] && ok || fail "export --force did not replace the folder"
run 2 export nowhere --hf out-hf
has "nowhere" err
[ ! -e out-hf ] && ok || fail "a failed export left out-hf behind"
run 2 export random
has "--hf" err

# generate decodes in context: a WordPiece model prints words, not ##pieces
python3 -c 'print("the cat sat on the mat.\n%\n" * 200)' > cats.txt
run 0 run quickstart data.train="$WORK/cats.txt" "data.separator='%'" data.validation_fraction=0.1 model.n_layer=1 \
  model.n_head=2 model.d_model=32 model.max_seq_len=64 data.seq_len=32 tokenizer.type=hf \
  tokenizer.path="$SRC/tests/fixtures/data/hf_bert_tokenizer.json" model.vocab_size=2000 trainer.max_steps=40 \
  scheduler.warmup_steps=5 optimizer.lr=0.01 checkpoint.at_end=false run.output_dir="$WORK/wordpiece"
run 0 generate wordpiece --prompt "the cat" --max-new-tokens 8 --seed 1 --greedy
has "the cat sat" out
[[ "$out" != *"##"* ]] && ok || fail "generate printed WordPiece pieces: $out"

finish
