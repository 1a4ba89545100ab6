"""A peer for hftrain's benchmarks: the same training step in plain PyTorch eager mode (the loop a
user would otherwise write), on the same token shard, so that hftrain's tokens/s has a yardstick
measured on the same machine in the same session (bench/peers.py, bench/gpu_throughput.sh).

Models: GPT-2 (learned positions, pre-LayerNorm, tanh GELU, biases, tied embeddings) and Llama
(RoPE, RMSNorm, SwiGLU, grouped-query attention, untied head), both with causal SDPA. With
--model-dir they start from the weights of a Hugging Face directory (what hftrain's model.from and
the Trainer peer load too); otherwise from GPT-2's initialisation. The step: bf16 autocast on CUDA
(fp32 on the CPU), the fastest AdamW PyTorch has on the device (fused), weight decay on matrices
only, global-norm clipping at 1.0, a cosine schedule with linear warmup, gradient accumulation.
--param-dtype bf16 instead stores the weights and gradients in bf16 with no autocast, and steps
fp32 master copies (the gradients cast up, the updated masters cast back): what Megatron and llm.c
do, and what hftrain's trainer.param_dtype=bf16 is measured against. --preset llama-1b is a
Llama-style model of about 1.1B parameters (d 2048, 16 layers, 32 heads, 8 KV heads, d_ff 8192).
Prints one JSON line: tokens/s over the timed steps, every timed step's seconds, when the first
step began, peak memory and the last loss. Needs torch (and safetensors for --model-dir).
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F



class GptBlock(nn.Module):
    def __init__(self, d, heads, d_ff, eps):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.c_attn(self.ln_1(x)).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, layers = cfg["d_model"], cfg["n_layer"]
        self.wte, self.wpe = nn.Embedding(cfg["vocab"], d), nn.Embedding(cfg["max_seq"], d)
        self.blocks = nn.ModuleList(GptBlock(d, cfg["n_head"], cfg["d_ff"], cfg["eps"]) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d, eps=cfg["eps"])
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02 / ((2 * layers) ** 0.5 if name.endswith("proj.weight") else 1))
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, ids, targets):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))

    @staticmethod
    def hf_name(name):
        """The parameter's name in this model for a GPT2LMHeadModel name (None: not a parameter here),
        and whether the tensor is a Conv1D weight (stored transposed)."""
        if not name.startswith("transformer.") or name.endswith((".attn.bias", ".attn.masked_bias")):
            return None, False
        name = name[len("transformer."):].replace("h.", "blocks.", 1) if name.startswith("transformer.h.") \
            else name[len("transformer."):]
        name = name.replace(".attn.c_attn.", ".c_attn.").replace(".attn.c_proj.", ".c_proj.")
        name = name.replace(".mlp.c_fc.", ".c_fc.").replace(".mlp.c_proj.", ".mlp_proj.")
        conv = name.startswith("blocks.") and name.endswith(".weight") and ".ln_" not in name
        return name, conv


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, self.heads, self.kv_heads = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"]
        self.hd = d // self.heads
        self.input_layernorm = nn.RMSNorm(d, eps=cfg["eps"])
        self.post_attention_layernorm = nn.RMSNorm(d, eps=cfg["eps"])
        self.q_proj = nn.Linear(d, self.heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, self.kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, self.kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(self.heads * self.hd, d, bias=False)
        self.gate_proj = nn.Linear(d, cfg["d_ff"], bias=False)
        self.up_proj = nn.Linear(d, cfg["d_ff"], bias=False)
        self.down_proj = nn.Linear(cfg["d_ff"], d, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(b, t, self.heads * self.hd))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.embed_tokens = nn.Embedding(cfg["vocab"], d)
        self.layers = nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg["n_layer"]))
        self.norm = nn.RMSNorm(d, eps=cfg["eps"])
        self.lm_head = nn.Linear(d, cfg["vocab"], bias=False)
        hd = d // cfg["n_head"]
        inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        freqs = torch.outer(torch.arange(cfg["max_seq"], dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids, targets):
        t = ids.shape[1]
        cos, sin = self.cos[:t], self.sin[:t]
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))

    @staticmethod
    def hf_name(name):
        if name == "lm_head.weight":
            return name, False
        if not name.startswith("model."):
            return None, False
        return name[len("model."):].replace(".self_attn.", ".").replace(".mlp.", "."), False


def hf_shape(model_dir):
    """The model's shape from a Hugging Face config.json."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    if c["model_type"] == "gpt2":
        return dict(arch="gpt2", vocab=c["vocab_size"], max_seq=c["n_positions"], n_layer=c["n_layer"],
                    n_head=c["n_head"], d_model=c["n_embd"], d_ff=c.get("n_inner") or 4 * c["n_embd"],
                    eps=c["layer_norm_epsilon"])
    return dict(arch="llama", vocab=c["vocab_size"], max_seq=c["max_position_embeddings"],
                n_layer=c["num_hidden_layers"], n_head=c["num_attention_heads"],
                n_kv_head=c.get("num_key_value_heads") or c["num_attention_heads"], d_model=c["hidden_size"],
                d_ff=c["intermediate_size"], eps=c["rms_norm_eps"],
                rope_theta=(c.get("rope_parameters") or {}).get("rope_theta") or c.get("rope_theta", 10000.0))


def load_hf_weights(model, model_dir):
    from safetensors.torch import load_file
    state = load_file(os.path.join(model_dir, "model.safetensors"))
    own = dict(model.named_parameters())
    loaded = set()
    with torch.no_grad():
        for name, tensor in state.items():
            mine, conv = model.hf_name(name)
            if mine is None or mine not in own:
                continue
            own[mine].copy_(tensor.t() if conv else tensor)
            loaded.add(mine)
    missing = set(own) - loaded
    if missing:
        raise SystemExit(f"{model_dir}: no weights for {sorted(missing)[:5]}")


def cosine_factor(step, warmup, total):
    """transformers' get_cosine_schedule_with_warmup, which hftrain's cosine matches."""
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shard", required=True, help="raw little-endian token ids")
    ap.add_argument("--token-dtype", choices=["uint16", "uint32"], default="uint16")
    ap.add_argument("--model-dir", help="a Hugging Face GPT-2 or Llama directory: shape and initial weights")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=16)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--warmup-steps", type=int, default=10, help="untimed steps first")
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--lr-warmup", type=int, default=2)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (not what LibTorch can do)")
    ap.add_argument("--param-dtype", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: bf16 weights and gradients, fp32 master weights, no autocast")
    ap.add_argument("--preset", choices=["gpt2-124m", "llama-1b"], default="gpt2-124m",
                    help="the shape without --model-dir (gpt2-124m takes --layers/--heads/--d-model/--vocab)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    dtype = {"uint16": torch.uint16, "uint32": torch.uint32}[a.token_dtype]
    tokens = torch.from_file(a.shard, shared=False, size=os.path.getsize(a.shard) // dtype.itemsize, dtype=dtype)
    tokens = tokens.to(torch.int64)
    torch.manual_seed(0)
    if a.model_dir:
        cfg = hf_shape(a.model_dir)
        model = (Gpt if cfg["arch"] == "gpt2" else Llama)(cfg)
        load_hf_weights(model, a.model_dir)
    elif a.preset == "llama-1b":
        cfg = dict(arch="llama", vocab=32000, max_seq=a.seq, n_layer=16, n_head=32, n_kv_head=8, d_model=2048,
                   d_ff=8192, eps=1e-5, rope_theta=500000.0)
        model = Llama(cfg)
    else:
        cfg = dict(arch="gpt2", vocab=a.vocab, max_seq=a.seq, n_layer=a.layers, n_head=a.heads, d_model=a.d_model,
                   d_ff=4 * a.d_model, eps=1e-5)
        model = Gpt(cfg)
    model.to(dev)
    # hftrain's default groups: no weight decay on biases, norms and embeddings.
    named = list(model.named_parameters())
    masters = None
    if a.param_dtype == "bf16":  # the optimizer steps fp32 copies; the model holds bf16
        masters = [(p, p.detach().clone().requires_grad_(True)) for _, p in named]
        model.to(torch.bfloat16)
        named = [(n, m) for (n, _), (_, m) in zip(named, masters)]
    is_matrix = lambda n, p: p.dim() >= 2 and not n.startswith(("wte", "wpe", "embed_tokens"))  # noqa: E731
    decay = [p for n, p in named if is_matrix(n, p)]
    rest = [p for n, p in named if not is_matrix(n, p)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), fused=True)
    total = a.warmup_steps + a.steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_factor(s, a.lr_warmup, total))
    step_fn = torch.compile(model) if a.compile else model
    span = a.micro_batch * (a.seq + 1)

    def batch(i):
        start = (i * span) % (tokens.numel() - span)
        x = tokens[start:start + span].view(a.micro_batch, a.seq + 1).to(dev, non_blocking=True)
        return x[:, :-1], x[:, 1:]

    n = 0
    first_step_start = None
    step_seconds = []
    for step in range(total):
        if step == a.warmup_steps and cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            begin = time.perf_counter()
        t0 = time.perf_counter()
        if first_step_start is None:
            first_step_start = time.time()
        for _ in range(a.grad_accum):
            ids, targets = batch(n)
            n += 1
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cuda and masters is None):
                loss = step_fn(ids, targets) / a.grad_accum
            loss.backward()
        if masters is not None:
            for p, m in masters:
                m.grad = p.grad.float()
                p.grad = None
            torch.nn.utils.clip_grad_norm_([m for _, m in masters], 1.0)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if masters is not None:
            with torch.no_grad():
                torch._foreach_copy_([p for p, _ in masters], [m for _, m in masters])
        sched.step()
        opt.zero_grad(set_to_none=True)
        if not cuda and step >= a.warmup_steps:
            step_seconds.append(time.perf_counter() - t0)
    last = loss.item()
    if cuda:
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - begin
        step_seconds = [elapsed / a.steps] * a.steps  # steps are queued, not timed one by one
    tokens_per_step = a.grad_accum * a.micro_batch * a.seq
    print(json.dumps({
        "peer": "pytorch eager" + (" + torch.compile" if a.compile else "") +
                (", bf16 weights + fp32 masters" if masters is not None else ""),
        "shape": a.model_dir or a.preset,
        "tokens_per_s": tokens_per_step * len(step_seconds) / sum(step_seconds),
        "step_time_ms": 1000 * sum(step_seconds) / len(step_seconds),
        "step_seconds": step_seconds,
        "first_step_start": first_step_start,
        "peak_mem_mb": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
        "last_loss": last * a.grad_accum,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
    }))


if __name__ == "__main__":
    main()
