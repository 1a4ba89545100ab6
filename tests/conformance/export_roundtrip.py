"""`hftrain export --hf` against the real Hugging Face libraries.

For GPT-2 and Llama models trained briefly by hftrain, with the byte tokenizer and with a BPE
tokenizer hftrain trained itself: the exported directory loads with transformers'
AutoModelForCausalLM and AutoTokenizer; the logits equal hftrain's (fp32, 1e-5 of their scale);
AutoTokenizer gives hftrain's ids on a multilingual text and decodes them back to it; and
`model.from` the exported directory fine-tunes exactly like `model.from` hftrain's own; and a
directory transformers' save_pretrained wrote loads into hftrain and trains on.

    .venv/bin/python tests/conformance/export_roundtrip.py path/to/hftrain path/to/hftrain_model_logits
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

TEXT = "Héllo wörld, 你好 👋\n\n  spaces   and\ttabs <|endoftext|> end"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def run(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw).stdout


def main():
    hftrain, logits_bin = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="hftrain-export-") as work:
        corpus = os.path.join(work, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for i in range(200):
                f.write(f"The cat {i} sat on the mat. Héllo wörld {i % 7}. 你好 👋 number {i}.\n%\n")
        bpe = os.path.join(work, "bpe.json")
        run(hftrain, "tokenizer", "train", "--data", corpus, "--output", bpe, "--vocab-size", "300")
        env = dict(os.environ, HFTRAIN_CACHE_DIR=os.path.join(work, "cache"))
        for arch in ("gpt2", "llama"):
            for tokenizer in ("byte", "bpe"):
                name = f"{arch}-{tokenizer}"
                run_dir = os.path.join(work, name)
                tok_args = ["tokenizer.type=bpe", f"tokenizer.path={bpe}"] if tokenizer == "bpe" else []
                base_args = [f"data.train={corpus}", "data.separator='%'", "model.arch=" + arch, "model.n_layer=2",
                             "model.n_head=4", "model.d_model=32", "model.max_seq_len=64", "data.seq_len=32",
                             "model.vocab_size=320", "scheduler.warmup_steps=2", "optimizer.lr=0.01",
                             "trainer.eval_every=0", "data.validation_fraction=0", "checkpoint.at_end=false"]
                run(hftrain, "run", "quickstart", *base_args, "trainer.max_steps=20", f"run.output_dir={run_dir}",
                    *tok_args, env=env)
                model_dir = os.path.join(run_dir, "final")
                out = os.path.join(work, name + "-hf")
                run(hftrain, "export", model_dir, "--hf", out)

                tok = AutoTokenizer.from_pretrained(out)
                ours = [int(x) for x in run(hftrain, "tokenizer", "encode", "--tokenizer",
                                            os.path.join(model_dir, "tokenizer.json"), "--text", TEXT).split("\n")[0].split()]
                theirs = tok(TEXT, add_special_tokens=False)["input_ids"]
                check(theirs == ours, f"{name}: AutoTokenizer ids {theirs[:20]}... differ from hftrain's {ours[:20]}...")
                check(tok.decode(theirs) == TEXT, f"{name}: AutoTokenizer decodes to {tok.decode(theirs)!r}")

                model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
                model.eval()
                ids = ours[:40]
                with torch.no_grad():
                    hf_logits = model(torch.tensor([ids])).logits[0]
                our_logits = torch.tensor(json.loads(run(logits_bin, model_dir, *map(str, ids))))
                scale = our_logits.abs().max().item()
                diff = (hf_logits - our_logits).abs().max().item()
                check(scale > 1.0, f"{name}: logits too small to compare ({scale})")
                check(diff <= 1e-5 * max(1.0, scale), f"{name}: logits differ by {diff} (scale {scale})")
                print(f"{name}: {len(ids)} tokens, max |logit| {scale:.3f}, max difference {diff:.2e}")

                # model.from the exported directory trains exactly like model.from hftrain's own.
                if name in ("gpt2-byte", "llama-bpe"):
                    histories = []
                    for source in (model_dir, out):
                        tune = os.path.join(work, name + "-tune-" + os.path.basename(source))
                        run(hftrain, "run", "quickstart", *base_args, "trainer.max_steps=5", "trainer.log_every=1",
                            f"model.from={source}", f"run.output_dir={tune}", *tok_args, env=env)
                        with open(os.path.join(tune, "metrics.jsonl"), encoding="utf-8") as f:
                            histories.append([json.loads(line)["loss"] for line in f if '"loss"' in line])
                    print(f"{name}: fine-tuning losses from the export {histories[1]}, from hftrain's directory {histories[0]}")
                    check(len(histories[0]) == 5 and len(histories[1]) == 5 and
                          all(abs(a - b) <= 1e-6 * abs(a) for a, b in zip(*histories)),
                          f"{name}: fine-tuning from the export gives losses {histories[1]}, from hftrain's directory {histories[0]}")
        # A directory transformers wrote itself (save_pretrained of a fresh Llama with GQA and an
        # odd intermediate size) loads into hftrain and trains on, with hftrain's BPE tokenizer.
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=320, hidden_size=48, intermediate_size=72, num_hidden_layers=2,
                             num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64,
                             rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-5)
        pretrained = os.path.join(work, "transformers-llama")
        LlamaForCausalLM(config).save_pretrained(pretrained)
        tuned = os.path.join(work, "from-transformers")
        run(hftrain, "run", "quickstart", f"data.train={corpus}", "data.separator='%'", "model.arch=llama",
            "model.n_layer=2", "model.n_head=6", "model.n_kv_head=2", "model.d_model=48", "model.d_ff=72",
            "model.max_seq_len=64", "model.vocab_size=320", "model.rope_theta=10000", "model.tie_embeddings=false",
            "model.norm_eps=1e-5", "data.seq_len=32", "trainer.max_steps=30", "trainer.log_every=1", "scheduler.warmup_steps=2",
            "optimizer.lr=0.01", "trainer.eval_every=0", "data.validation_fraction=0", "checkpoint.at_end=false",
            "tokenizer.type=bpe", f"tokenizer.path={bpe}", f"model.from={pretrained}", f"run.output_dir={tuned}", env=env)
        with open(os.path.join(tuned, "metrics.jsonl"), encoding="utf-8") as f:
            losses = [json.loads(line)["loss"] for line in f if '"loss"' in line]
        import math
        check(len(losses) == 30 and abs(losses[0] - math.log(320)) < 0.5 and losses[-1] < losses[0] - 1.0,
              f"training on from transformers' save_pretrained: losses {losses[:3]} ... {losses[-3:]}")
        print(f"from transformers' save_pretrained: loss {losses[0]:.3f} (ln 320 = {math.log(320):.3f}) -> {losses[-1]:.3f}")

    if failures:
        for m in failures:
            print("FAIL:", m, file=sys.stderr)
        return 1
    print("ok: exported GPT-2 and Llama models (byte and BPE tokenizers) load in transformers with hftrain's logits and ids")
    return 0


if __name__ == "__main__":
    sys.exit(main())
