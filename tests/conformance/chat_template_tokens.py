"""Chat data through the model's own template, token for token against transformers.

    chat_template_tokens.py path/to/hftrain

Three tokenizers with chat special tokens are trained here with `tokenizers` (byte-level BPE;
SentencePiece-style BPE with byte fallback behind Prepend + Replace normalizers, as Llama-2; the same
with a Metaspace pre-tokenizer, prepend_scheme "first") and saved with transformers
(tokenizer.json + tokenizer_config.json carrying a chat_template). For each template
of tests/fixtures/chat_templates (ChatML with tools, Llama 3.1, Phi-3, Zephyr, Gemma without a
system role, and ChatML and Mistral [INST] with {% generation %} blocks), `hftrain prepare` with data.chat_template=auto tokenizes a chat JSONL into
its token cache, which is read back and compared per record with:
  ids   transformers' apply_chat_template(..., tokenize=True) plus the end-of-text token hftrain
        appends to every document;
  mask  for the template with generation blocks, transformers' return_assistant_tokens_mask; for
        the others, the rule hftrain documents (tokenizer/chat_template.h) computed here from
        transformers' renderings: an assistant message's span runs from the end of the rendering of
        the messages before it with the generation prompt to the end of the rendering through it
        (less a special token the template writes only after the last message, as Phi-3's eos);
        a token carries loss when its first character lies in a span. The appended end-of-text
        token always carries loss.
Templates that rewrite earlier turns (Mistral-style, which folds the system message into the last
user turn, and a DeepSeek-style one) have no {% generation %} blocks, so they must be refused with
exit 2 and a message saying why.
Exits 1 on any difference.
"""
import json
import os
import subprocess
import sys
import tempfile

from token_cache_file import read_cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZERS = ["byte-level", "sentencepiece", "metaspace"]
TEMPLATES = ["chatml_tools", "llama31", "phi3", "zephyr", "gemma", "generation", "mistral_generation"]
# Templates that rewrite earlier turns (Mistral folds the system message into the last user turn;
# this DeepSeek-style one changes how earlier turns print): without {% generation %} blocks the
# prefix rule cannot place the assistant text, and hftrain must refuse them, not guess.
REFUSED = ["mistral", "deepseek"]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>",
            "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<|system|>", "<|user|>",
            "<|assistant|>", "<|end|>", "<start_of_turn>", "<end_of_turn>"]
CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4."}]},
    {"messages": [{"role": "system", "content": "You answer briefly."},
                  {"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."},
                  {"role": "user", "content": "Another, in French: ünïcödé ✓ 🙂"},
                  {"role": "assistant", "content": "Rouge — 赤."}]},
    {"prompt": "Say hello.", "response": "Hello there!"},
    {"messages": [{"role": "user", "content": "Quote the token <|im_end|> please."},
                  {"role": "assistant", "content": "Here: <|im_end|> and\n\ntwo lines."}]},
]




def conversations_for(name):
    """Gemma's template refuses a system role (raise_exception): its conversations go without."""
    if name != "gemma":
        return CONVERSATIONS
    out = []
    for c in CONVERSATIONS:
        if "messages" in c:
            c = {"messages": [m for m in c["messages"] if m["role"] != "system"]}
        out.append(c)
    return out


def train_tokenizer(kind):
    """kind: "byte-level" (GPT-2/Llama-3/Qwen style); "sentencepiece" (Llama-2/Mistral v1 style:
    byte-fallback BPE behind a Prepend('▁') + Replace(' ', '▁') normalizer, no pre-tokenizer);
    "metaspace" (the newer conversion of the same: a Metaspace pre-tokenizer with prepend_scheme
    "first", which prepends '▁' only at the start of the whole text)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    text = [json.dumps(c, ensure_ascii=False) for c in CONVERSATIONS] * 20
    if kind == "byte-level":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIALS, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
        if kind == "sentencepiece":
            tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        else:
            tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
        alphabet = sorted(set("".join(text)) | set("\u2581"))
        trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=["<unk>"] + SPECIALS + [f"<0x{b:02X}>" for b in range(256)],
                                      show_progress=False, initial_alphabet=alphabet)
    tok.train_from_iterator(text, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|begin_of_text|>")


def messages_of(record):
    if "messages" in record:
        return record["messages"]
    return [{"role": "user", "content": record["prompt"]}, {"role": "assistant", "content": record["response"]}]


def expected(tok, template, record):
    msgs = messages_of(record)
    if "{% generation" in template or "{%- generation" in template:
        out = tok.apply_chat_template(msgs, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        return list(out["input_ids"]), list(out["assistant_masks"])
    text = tok.apply_chat_template(msgs, tokenize=False)
    spans = []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        start = len(tok.apply_chat_template(msgs[:i], tokenize=False, add_generation_prompt=True)) if i else 0
        if i == 0:
            start = len(tok.apply_chat_template([], tokenize=False, add_generation_prompt=True))
        turn = tok.apply_chat_template(msgs[:i + 1], tokenize=False)
        end = len(turn)
        if not text.startswith(turn):
            for special in (tok.bos_token, tok.eos_token, tok.unk_token, tok.pad_token):
                if special and turn.endswith(special) and text.startswith(turn[:-len(special)]):
                    end -= len(special)
                    break
        spans.append((start, end))
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(a <= s < b for a, b in spans)) for s, _ in enc["offset_mapping"]]
    return list(enc["input_ids"]), mask


def main():
    hftrain = sys.argv[1]
    work = tempfile.mkdtemp(prefix="hftrain-chat-tokens-")
    failures = 0
    cases = 0
    for kind in TOKENIZERS:
        tok = train_tokenizer(kind)
        for name in TEMPLATES + REFUSED:
            c, f = check_template(hftrain, work, tok, kind, name)
            cases += c
            failures += f
    print(f"{cases} tokenizer x template x conversation cases, {failures} differences")
    sys.exit(1 if failures else 0)


def check_template(hftrain, work, tok, kind, name):
    """Returns (cases, failures) for one tokenizer and template."""
    failures = 0
    cases = 0
    label = f"{kind} {name}"
    template = open(os.path.join(ROOT, "tests", "fixtures", "chat_templates", name + ".jinja")).read()
    tok.chat_template = template
    model_dir = os.path.join(work, kind, name)
    tok.save_pretrained(model_dir)
    chat = os.path.join(work, kind + "-" + name + ".jsonl")
    with open(chat, "w") as f:
        for record in conversations_for(name):
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    recipe = os.path.join(work, "chat.yaml")
    with open(recipe, "w") as f:
        f.write("run:\n  name: chat\ntrainer:\n  max_steps: 1\n")
    cache = os.path.join(work, "cache-" + kind + "-" + name)
    cmd = [hftrain, "prepare", recipe, "tokenizer.type=hf", f"tokenizer.path={model_dir}/tokenizer.json",
           f"data.train=[{chat}]", "data.format=chat", "data.validation=[]", "data.validation_fraction=0",
           "data.exclude=[]", f"data.cache_dir={cache}", "data.chat_template=auto", "data.num_workers=2"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if name in REFUSED:
        if p.returncode != 2 or "rewrites earlier turns" not in p.stderr:
            print(f"{label}: expected a refusal (exit 2, 'rewrites earlier turns'), got {p.returncode}:\n{p.stderr[-2000:]}")
            return 1, 1
        return 1, 0
    if p.returncode != 0:
        print(f"{label}: hftrain prepare failed ({p.returncode}):\n{p.stderr[-2000:]}")
        return 1, 1
    files = [os.path.join(cache, f) for f in os.listdir(cache) if f.endswith(".bin")]
    ids, mask, starts = read_cache(files[0])
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    for d, record in enumerate(conversations_for(name)):
        cases += 1
        want_ids, want_mask = expected(tok, template, record)
        have_ids = list(ids[starts[d]:starts[d + 1]])
        have_mask = list(mask[starts[d]:starts[d + 1]])
        if have_ids != want_ids + [eot]:
            print(f"{label} record {d}: ids differ\n  hftrain      {have_ids}\n  transformers {want_ids + [eot]}")
            failures += 1
        elif have_mask != want_mask + [1]:
            print(f"{label} record {d}: loss mask differs\n  hftrain  {have_mask}\n  expected {want_mask + [1]}")
            failures += 1
    return cases, failures


if __name__ == "__main__":
    main()
