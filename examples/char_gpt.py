"""A character-level GPT: a small decoder-only transformer trained on a few pages of classics.

    python examples/char_gpt.py                   # 600 steps, about a minute on a laptop CPU
    python examples/char_gpt.py --steps 50        # a quick look
    python examples/char_gpt.py --prompt "It was" --temperature 0.8
    python examples/char_gpt.py --device webgpu

The model predicts each next character from the ones before it: token and position
embeddings, blocks of causal multi-head self-attention and an MLP (pre-norm, with residual
connections), then a linear head tied to the token embedding. Attention is written out in
full (scores, causal mask, softmax, weighted sum) so that every step is visible. After
training it samples new text.
"""

import argparse
import math
import os

import ember as torch
from ember import nn
from ember.nn import functional as F

DEFAULT_TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "classics.txt")


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, block_size, dropout):
        super().__init__()
        assert dim % heads == 0, "dim must be divisible by heads"
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)       # queries, keys and values in one product
        self.proj = nn.Linear(dim, dim)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        causal = torch.ones(block_size, block_size, dtype=torch.bool).tril()
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, heads, T, head_dim)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)   # (B, heads, T, T)
        scores = scores.masked_fill(~self.causal[:T, :T], float("-inf"))  # no peeking ahead
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        y = (weights @ v).transpose(1, 2).reshape(B, T, C)              # heads side by side
        return self.resid_dropout(self.proj(y))


class Block(nn.Module):
    def __init__(self, dim, heads, block_size, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, block_size, dropout)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size=64, dim=64, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.pos_emb = nn.Embedding(block_size, dim)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(dim, heads, block_size, dropout)
                                      for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight   # weight tying
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than the block size "
                             f"{self.block_size}")
        x = self.drop(self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))
        logits = self.head(self.ln_f(self.blocks(x)))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    @torch.no_grad()
    def generate(self, idx, new_tokens, temperature=1.0, top_k=None):
        """Extend ``idx`` (B, T) by sampling ``new_tokens`` characters one at a time."""
        for _ in range(new_tokens):
            logits, _ = self(idx[:, -self.block_size:])
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                kth = logits.topk(min(top_k, logits.shape[-1])).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            next_id = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat([idx, next_id], dim=1)
        return idx


class CharData:
    """The text as integer ids, a character vocabulary, and random (input, target) windows
    (on ``device``)."""

    def __init__(self, text, val_fraction=0.1, device="cpu"):
        self.device = device
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        data = self.encode(text)
        split = int(len(data) * (1 - val_fraction))
        self.train, self.val = data[:split], data[split:]

    def encode(self, s):
        return torch.tensor([self.index[c] for c in s], dtype=torch.long)

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)

    def batch(self, split, batch_size, block_size):
        data = self.train if split == "train" else self.val
        starts = torch.randint(len(data) - block_size - 1, (batch_size, 1))
        positions = starts + torch.arange(block_size)          # (B, T) indices, vectorised
        return data[positions].to(self.device), data[positions + 1].to(self.device)


@torch.no_grad()
def estimate_loss(model, data, batch_size, block_size, batches=4):
    model.eval()
    out = {}
    for split in ("train", "val"):
        out[split] = sum(model(*data.batch(split, batch_size, block_size))[1].item()
                         for _ in range(batches)) / batches
    model.train()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="character-level GPT")
    parser.add_argument("--text", default=DEFAULT_TEXT, help="a UTF-8 text file to learn")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--eval-interval", type=int, default=100)
    parser.add_argument("--prompt", default="\n")
    parser.add_argument("--sample-chars", type=int, default=300)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or webgpu")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (small matrices)")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    with open(args.text, encoding="utf-8") as f:
        data = CharData(f.read(), device=device)
    model = GPT(len(data.chars), args.block_size, args.dim, args.heads, args.layers,
                args.dropout).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(data.train)} training characters, vocabulary of {len(data.chars)}, "
          f"{n_params / 1e3:.1f}k parameters")
    # decay the matrices, not the biases, norms and embeddings (GPT's usual recipe)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "emb" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "emb" not in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.99))
    warmup = max(1, args.steps // 20)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup)
        * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    losses = []
    for step in range(args.steps):
        x, y = data.batch("train", args.batch_size, args.block_size)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if (step + 1) % args.eval_interval == 0 or step == args.steps - 1:
            est = estimate_loss(model, data, args.batch_size, args.block_size)
            print(f"step {step + 1:5d}  train loss {est['train']:.3f}  val loss {est['val']:.3f}")
    model.eval()
    prompt = data.encode(args.prompt).view(1, -1).to(device)
    sample = model.generate(prompt, args.sample_chars, args.temperature, args.top_k)
    text = data.decode(sample[0].cpu().tolist())
    print("--- sample ---")
    print(text)
    return {"losses": losses, "sample": text}


if __name__ == "__main__":
    main()
