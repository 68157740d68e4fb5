"""A small decoder-only transformer (GPT-style), written for TorchScript.

forward(inputs, targets) takes int64 token ids [B, T] and the next tokens [B, T] and returns the
mean cross-entropy: the form tl trains with --model-returns loss. Pre-norm blocks of causal
self-attention and an MLP, learned position embeddings, dropout after the embeddings, the
attention weights and each residual branch (so the consistency contract covers dropout too).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, context: int, dropout: float):
        super().__init__()
        assert width % heads == 0
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, context, context), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, context: int, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, context, dropout)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, vocab: int, context: int = 128, width: int = 128, layers: int = 4,
                 heads: int = 4, dropout: float = 0.1):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([Block(width, heads, context, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def logits(self, inputs: torch.Tensor) -> torch.Tensor:
        t = inputs.size(1)
        if t > self.context:
            raise ValueError("sequence longer than the model's context")
        positions = torch.arange(t, device=inputs.device)
        x = self.drop(self.tokens(inputs) + self.positions(positions))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.logits(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
