"""The peer for bench/gpu_throughput.sh: the same GPT-2 training step in plain PyTorch eager mode
(the loop a user would otherwise write), on the same token shard,
so that hftrain's tokens/s has a yardstick measured on the same GPU in the same session.

Same model (learned positions, pre-LayerNorm, tanh GELU, biases, tied embeddings, causal SDPA),
same step (bf16 autocast, AdamW with betas 0.9/0.95 and weight decay on matrices only, global-norm
clipping at 1.0, gradient accumulation). Prints one JSON line: tokens/s over the timed steps and the
CUDA peak memory. Needs only torch.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.c_attn(self.ln_1(x)).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, layers, heads, d):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shard", required=True, help="raw uint16 tokens (ids below 32768)")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=16)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--warmup-steps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (not what LibTorch can do)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")
    raw = open(a.shard, "rb").read()
    tokens = torch.frombuffer(bytearray(raw), dtype=torch.int16).to(torch.int64)
    torch.manual_seed(0)
    model = GPT(a.vocab, a.seq, a.layers, a.heads, a.d_model).to(dev)
    # hftrain's default groups: no weight decay on biases, norms and embeddings.
    named = list(model.named_parameters())
    decay = [p for name, p in named if p.dim() >= 2 and not name.startswith(("wte", "wpe"))]
    rest = [p for name, p in named if not (p.dim() >= 2 and not name.startswith(("wte", "wpe")))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95))
    step_fn = torch.compile(model) if a.compile else model
    span = a.micro_batch * (a.seq + 1)

    def batch(i):
        start = (i * span) % (tokens.numel() - span)
        x = tokens[start:start + span].view(a.micro_batch, a.seq + 1).to(dev, non_blocking=True)
        return x[:, :-1], x[:, 1:]

    n = 0
    for step in range(a.warmup_steps + a.steps):
        if step == a.warmup_steps:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            begin = time.perf_counter()
        for _ in range(a.grad_accum):
            ids, targets = batch(n)
            n += 1
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step_fn(ids, targets) / a.grad_accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    last = loss.item()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - begin
    print(json.dumps({
        "peer": "pytorch eager" + (" + torch.compile" if a.compile else ""),
        "tokens_per_s": a.steps * a.grad_accum * a.micro_batch * a.seq / elapsed,
        "step_time_ms": 1000 * elapsed / a.steps,
        "peak_mem_mb": torch.cuda.max_memory_allocated() / 2**20,
        "last_loss": last * a.grad_accum,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }))


if __name__ == "__main__":
    main()
