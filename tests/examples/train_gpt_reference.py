#!/usr/bin/env python3
"""The train_gpt model, data order and optimizer in PyTorch, for tests/examples/train_gpt_test.cpp.

    train_gpt_reference.py DATA OUT_INIT OUT_LOSSES --steps S --layers L --d-model D --heads H
                           --context T --batch B --lr LR --weight-decay WD --val-fraction F

Builds the GPT of examples/train_gpt.cpp (GPT-2 pre-LayerNorm blocks, exact GELU, LayerNorm eps
1e-5, learned position embeddings, a head without bias) with PyTorch's own initialisation, writes
its weights to OUT_INIT as /params/<name> (the --init layout of train_gpt), then trains it for S
steps on the --sequential batches (sample r of step k: the T + 1 bytes at offset
((k B + r) T) mod (n - T - 1) of the training part, n its length) with AdamW (betas 0.9, 0.999,
eps 1e-8; weight decay on the parameters of two or more axes only, as train_gpt's default), a
constant learning rate, in float32 on the CPU, and writes the loss of every step to OUT_LOSSES
(one per line).
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, d))


class Mlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = Mlp(d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, layers, d, heads, context):
        super().__init__()
        self.tok_emb = nn.Embedding(256, d)
        self.pos_emb = nn.Embedding(context, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, 256, bias=False)
        for emb in (self.tok_emb, self.pos_emb):
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(t))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main():
    # Imported here: the model alone (bench/peers/gpu_anchors.py imports Gpt on a GPU machine)
    # needs only torch.
    import h5py
    import numpy as np

    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("out_init")
    p.add_argument("out_losses")
    for name in ("steps", "layers", "d-model", "heads", "context", "batch"):
        p.add_argument("--" + name, type=int, required=True)
    for name in ("lr", "weight-decay", "val-fraction"):
        p.add_argument("--" + name, type=float, required=True)
    a = p.parse_args()
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    data = np.fromfile(a.data, dtype=np.uint8)
    n = len(data) - math.floor(len(data) * a.val_fraction)
    t, b = a.context, a.batch
    model = Gpt(a.layers, a.d_model, a.heads, t)
    with h5py.File(a.out_init, "w") as f:
        for name, value in model.state_dict().items():
            f.create_dataset("params/" + name, data=value.numpy())
    params = list(model.parameters())
    groups = [{"params": [q for q in params if q.dim() >= 2], "weight_decay": a.weight_decay},
              {"params": [q for q in params if q.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for k in range(a.steps):
        rows = []
        for r in range(b):
            offset = ((k * b + r) * t) % (n - t - 1)
            rows.append(torch.from_numpy(data[offset:offset + t + 1].astype(np.int64)))
        window = torch.stack(rows)
        logits = model(window[:, :t])
        loss = F.cross_entropy(logits.reshape(-1, 256), window[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with open(a.out_losses, "w") as f:
        f.write("\n".join(repr(v) for v in losses) + "\n")


if __name__ == "__main__":
    main()
