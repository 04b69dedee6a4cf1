#!/usr/bin/env python3
"""Golden outputs of a small random-weight DLRM from a PyTorch reference written here from the
model's description (no package ships DLRM as a library model): the dot-interaction DLRM of
MLPerf's layout, in float32.

    bottom MLP    x = dense; per layer Linear then ReLU (after every layer, the last too)
    embeddings    per table t: nn.EmbeddingBag(rows_t, D, mode="sum") over the sample's ids
                  (empty bags give zeros)
    interaction   the F + 1 vectors [x, e_0 .. e_{F-1}] of each sample: their Gram matrix's
                  strict lower triangle in row-major order, (1,0), (2,0), (2,1), (3,0), ...,
                  after x itself: D + (F + 1) F / 2 features
    top MLP       Linear, ReLU, ..., Linear (no ReLU after the last, one output: the logit)
    probability   sigmoid(logit)

Modules and state-dict names are DLRM_Net's (facebookresearch/dlrm): emb_l (an nn.ModuleList
of the tables), bot_l and top_l (nn.Sequential of Linear and ReLU, the top one ending in
Sigmoid), so the Linears are bot_l.0, bot_l.2, ... and top_l.0, ..., top_l.8. The engine's
loader reads those names (src/models/recsys/dlrm/dlrm_weights.h).

The config is the engine's tiny-dlrmv2 preset (src/models/recsys/registrations.cpp): 5 dense
features, 6 tables of 16-wide rows (one table of a single row), bottom MLP 32-24-16, top MLP
48-32-16-8-1. Samples: 16, dense features in [0, 4) (MLPerf feeds log(1 + count)), bags of 0
to 4 ids with a few of 20 and one of 60, ids uniform in their table.

    python3 tests/data/models/recsys/make_dlrm_goldens.py OUT_DIR
Writes OUT_DIR/dlrm/: config.json, model.safetensors (float32 weights), golden.json (the
samples' ids per table) and golden.safetensors (float32: dense [B, 5], bottom [B, 16] (the
bottom MLP's output), interaction [B, 37] (the top MLP's input), logits [B], probabilities [B]).
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

CONFIG = {
    "model_type": "dlrm",
    "dense_features": 5,
    "embedding_dim": 16,
    "sparse_features": 6,
    "table_sizes": [7, 30, 1, 100, 13, 64],
    "bottom_mlp": [32, 24, 16],
    "top_mlp": [48, 32, 16, 8, 1],
    "interaction": "dot",
    "interaction_itself": False,
}
SAMPLES = 16


def mlp(widths_in_out, sigmoid_at_end):
    """nn.Sequential of Linear and ReLU (DLRM_Net's layout): ReLU after every Linear, or after
    every one but the last, which is followed by Sigmoid instead."""
    layers = []
    for i, (n_in, n_out) in enumerate(widths_in_out):
        layers.append(torch.nn.Linear(n_in, n_out, bias=True))
        last = i == len(widths_in_out) - 1
        layers.append(torch.nn.Sigmoid() if last and sigmoid_at_end else torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def widths(n_in, outs):
    pairs = []
    for n_out in outs:
        pairs.append((n_in, n_out))
        n_in = n_out
    return pairs


class Dlrm(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["embedding_dim"]
        tables = c["table_sizes"]
        self.emb_l = torch.nn.ModuleList(
            torch.nn.EmbeddingBag(rows, d, mode="sum", include_last_offset=True) for rows in tables)
        self.bot_l = mlp(widths(c["dense_features"], c["bottom_mlp"]), sigmoid_at_end=False)
        f = len(tables)
        self.top_l = mlp(widths(d + (f + 1) * f // 2, c["top_mlp"]), sigmoid_at_end=True)

    @staticmethod
    def interact(x, pooled):
        b, d = x.shape
        vectors = torch.stack([x] + pooled, dim=1)  # [B, F + 1, D]
        gram = torch.bmm(vectors, vectors.transpose(1, 2))
        n = vectors.shape[1]
        rows = [i for i in range(n) for _ in range(i)]
        cols = [j for i in range(n) for j in range(i)]
        return torch.cat([x, gram[:, rows, cols]], dim=1)

    def forward(self, dense, ids, offsets):
        """ids[t], offsets[t]: table t's ids of every sample's bag, and the B + 1 bag offsets.
        Returns (bottom output, interaction, logits, probabilities)."""
        x = self.bot_l(dense)
        pooled = [emb(ids[t], offsets[t]) for t, emb in enumerate(self.emb_l)]
        z = self.interact(x, pooled)
        logits = self.top_l[:-1](z)  # everything but the final Sigmoid
        probabilities = self.top_l[-1](logits)
        return x, z, logits.squeeze(1), probabilities.squeeze(1)


def randomize(model, gen):
    """Tables uniform in [-0.5, 0.5) (so dot products of pooled rows are of order one);
    Linears as DLRM_Net initialises them: weights normal with std sqrt(2 / (fan_in +
    fan_out)), biases normal with std sqrt(1 / fan_out)."""
    with torch.no_grad():
        for emb in model.emb_l:
            emb.weight.copy_(torch.rand(emb.weight.shape, generator=gen) - 0.5)
        for seq in (model.bot_l, model.top_l):
            for layer in seq:
                if isinstance(layer, torch.nn.Linear):
                    n_out, n_in = layer.weight.shape
                    layer.weight.copy_(torch.randn(layer.weight.shape, generator=gen) * (2.0 / (n_in + n_out)) ** 0.5)
                    layer.bias.copy_(torch.randn(layer.bias.shape, generator=gen) * (1.0 / n_out) ** 0.5)


def make_samples(gen, c):
    """Per sample, its dense features and, per table, its bag of ids."""
    dense = torch.rand((SAMPLES, c["dense_features"]), generator=gen) * 4
    sparse = []
    for s in range(SAMPLES):
        bags = []
        for t, rows in enumerate(c["table_sizes"]):
            n = int(torch.randint(0, 5, (1,), generator=gen))
            if (s * len(c["table_sizes"]) + t) % 11 == 5:
                n = 20
            if s == 3 and t == 3:
                n = 60
            bags.append(torch.randint(0, rows, (n,), generator=gen).tolist())
        sparse.append(bags)
    return dense, sparse


def packed(sparse, t):
    """Table t's ids of every sample, and the B + 1 offsets of their bags."""
    ids, offsets = [], [0]
    for bags in sparse:
        ids.extend(bags[t])
        offsets.append(len(ids))
    return torch.tensor(ids, dtype=torch.int64), torch.tensor(offsets, dtype=torch.int64)


def main(out_dir):
    gen = torch.Generator().manual_seed(2025)
    model = Dlrm(CONFIG).eval()
    randomize(model, gen)
    dense, sparse = make_samples(gen, CONFIG)
    tables = len(CONFIG["table_sizes"])
    ids, offsets = zip(*(packed(sparse, t) for t in range(tables)))
    with torch.no_grad():
        bottom, interaction, logits, probabilities = model(dense, list(ids), list(offsets))

    folder = os.path.join(out_dir, "dlrm")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    state = {name: t.detach().contiguous() for name, t in model.state_dict().items()}
    save_file(state, os.path.join(folder, "model.safetensors"))
    save_file({"dense": dense.contiguous(), "bottom": bottom.contiguous(), "interaction": interaction.contiguous(),
               "logits": logits.contiguous(), "probabilities": probabilities.contiguous()},
              os.path.join(folder, "golden.safetensors"))
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump({"model": "DLRM with the dot interaction (DLRM_Net's layout), float32, written from its description",
                   "torch": torch.__version__,
                   "samples": [{"sparse": bags} for bags in sparse],
                   "tensors": "golden.safetensors, float32: dense [B, 5], bottom [B, 16], interaction [B, 37], "
                              "logits [B], probabilities [B]"}, f, indent=1)
        f.write("\n")
    print("dlrm ok:", sorted(os.listdir(folder)))
    print("weights:", sorted(state))
    print("logits:", [round(float(v), 4) for v in logits])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
