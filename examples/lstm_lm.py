"""A character-level LSTM language model, trained with truncated backpropagation through time.

    python examples/lstm_lm.py                    # 20 passes over the text, about 15 s
    python examples/lstm_lm.py --steps 40         # a quick look
    python examples/lstm_lm.py --device webgpu

The text (the same few pages as ``char_gpt.py``) is cut into ``batch-size`` parallel streams;
each step reads the next ``bptt`` characters of every stream, carrying the LSTM's state over
from the previous step but cutting the graph there (``detach``), so each backward pass spans
``bptt`` steps. Reports loss and perplexity, then samples text.
"""

import argparse
import math
import os

import ember as torch
from ember import nn
from ember.nn import functional as F

DEFAULT_TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "classics.txt")


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab_size, embed=32, hidden=128, layers=2, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, dropout=dropout,
                            batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, idx, state=None):
        h, state = self.lstm(self.embed(idx), state)     # h: (B, T, hidden)
        return self.out(self.drop(h)), state


def batchify(ids, batch_size):
    """(N,) ids -> (batch_size, N // batch_size): row b is the b-th contiguous stream."""
    n = len(ids) // batch_size
    return ids[:n * batch_size].view(batch_size, n)


def detach(state):
    return tuple(s.detach() for s in state)


@torch.no_grad()
def evaluate(model, streams, bptt):
    model.eval()
    total, count, state = 0.0, 0, None
    for i in range(0, streams.shape[1] - 1, bptt):
        x = streams[:, i:i + bptt]
        y = streams[:, i + 1:i + 1 + bptt]
        x = x[:, :y.shape[1]]
        logits, state = model(x, state)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
        count += y.numel()
    model.train()
    return total / count


@torch.no_grad()
def sample(model, chars, index, prompt, length, temperature, device):
    model.eval()
    state = None
    idx = torch.tensor([[index[c] for c in prompt]], device=device)
    out = list(prompt)
    for _ in range(length):
        logits, state = model(idx, state)
        probs = F.softmax(logits[:, -1] / temperature, dim=-1)
        idx = torch.multinomial(probs, 1)
        out.append(chars[idx.item()])
    return "".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description="character-level LSTM language model")
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--bptt", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--clip", type=float, default=0.5)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--sample-chars", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or webgpu")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (small matrices)")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], device=device)
    split = int(len(ids) * 0.9)
    train = batchify(ids[:split], args.batch_size)
    val = batchify(ids[split:], 4)

    model = LSTMLanguageModel(len(chars), hidden=args.hidden, layers=args.layers).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
    losses = []
    for epoch in range(1, args.epochs + 1):
        state = None
        for i in range(0, train.shape[1] - 1 - args.bptt, args.bptt):
            x = train[:, i:i + args.bptt]
            y = train[:, i + 1:i + 1 + args.bptt]
            if state is not None:
                state = detach(state)             # truncate the graph at the window's start
            logits, state = model(x, state)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            losses.append(loss.item())
            if args.steps is not None and len(losses) >= args.steps:
                break
        scheduler.step()
        val_loss = evaluate(model, val, args.bptt)
        recent = sum(losses[-10:]) / len(losses[-10:])
        print(f"epoch {epoch}  train loss {recent:.3f}  val loss {val_loss:.3f}  "
              f"val perplexity {math.exp(val_loss):.1f}")
        if args.steps is not None and len(losses) >= args.steps:
            break
    text = sample(model, chars, index, "It was", args.sample_chars, args.temperature, device)
    print("--- sample ---")
    print(text)
    return {"losses": losses, "val_loss": val_loss, "sample": text}


if __name__ == "__main__":
    main()
