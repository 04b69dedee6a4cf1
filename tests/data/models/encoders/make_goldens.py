#!/usr/bin/env python3
"""Golden outputs from HF transformers for a small random-weight XLM-RoBERTa encoder with
BGE-M3's three heads. The engine's test (tests/models/encoder/bge_m3_golden_test.cpp) loads
the folder written here and compares.

The model is an XLMRobertaModel of 2 layers, hidden 128, 2 heads of 64 (so the CUDA
attention kernel runs it too), 40 positions (RoBERTa's padding_idx offset leaves 38 tokens
a sequence). Weights are drawn with a spread that keeps every layer's output away from
the trivial (projections N(0, 1/fan_in), embeddings N(0, 1/4), norms around their
identity), rounded to bf16 and saved with save_pretrained in bf16, so the engine loads
exactly the values used here. BGE-M3's heads are written beside the checkpoint as the
upstream repository ships them: sparse_linear.pt (a torch.nn.Linear(H, 1) state dict) and
colbert_linear.pt (torch.nn.Linear(H, H)), and the same tensors in bf16 as
sparse_linear.safetensors / colbert_linear.safetensors ("weight", "bias"): the engine reads
either form (the tests check that both give the same outputs).

The outputs are computed in float32 (eager attention) on one right-padded batch, with an
attention mask, the way BGE-M3's own encode does it:
  - last_hidden_state of every real token, packed: [sum(n), H]
  - dense: normalize(last_hidden_state[:, 0]): [B, H]
  - sparse: relu(sparse_linear(last_hidden_state)) per real token, packed: [sum(n)]
    and the lexical weights (per token id, the largest weight over the sequence, the
    special tokens cls/eos/pad/unk left out) in golden.json
  - colbert: normalize(colbert_linear(last_hidden_state[:, 1:]) * mask[:, 1:]) of the
    n - 1 real tokens after the first, packed: [sum(n - 1), H]
One sequence holds the pad id in its middle: RoBERTa's position ids skip it (it gets
position padding_idx) while the attention mask keeps it.

    python3 tests/data/models/encoders/make_goldens.py OUT_DIR
Writes OUT_DIR/xlm_roberta/: config.json, model.safetensors, sparse_linear.{pt,safetensors},
colbert_linear.{pt,safetensors}, golden.json, golden.safetensors.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

CONFIG = dict(vocab_size=256, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
              hidden_act="gelu", max_position_embeddings=40, type_vocab_size=1, layer_norm_eps=1e-5,
              pad_token_id=1, bos_token_id=0, eos_token_id=2, position_embedding_type="absolute")
CLS, PAD, EOS, UNK = 0, 1, 2, 3
# Lengths: one token, CLS + EOS only, short and longer ones, the longest the positions allow.
LENGTHS = [1, 2, 7, 23, 38, 33]


def randomize(model, gen):
    for name, p in model.named_parameters():
        with torch.no_grad():
            if "LayerNorm" in name:
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embeddings" in name:
                p.copy_(0.25 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            else:  # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    model.to(torch.bfloat16).to(torch.float32)


def head(in_features, out_features, gen):
    lin = torch.nn.Linear(in_features, out_features)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(lin.weight.shape, generator=gen) / in_features ** 0.5)
        lin.bias.copy_(0.1 * torch.randn(lin.bias.shape, generator=gen))
    return lin.to(torch.bfloat16).to(torch.float32)


def sequences(gen, vocab):
    seqs = []
    for n in LENGTHS:
        ids = torch.randint(4, vocab, (n,), generator=gen).tolist()
        if n >= 2:
            ids[0], ids[-1] = CLS, EOS
        else:
            ids[0] = CLS
        seqs.append(ids)
    seqs[3][5] = PAD  # the pad id inside a sequence: no position of its own
    return seqs


def lexical_weights(ids, weights):
    out = {}
    for t, w in zip(ids, weights):
        if t in (CLS, EOS, PAD, UNK) or w <= 0:
            continue
        out[str(t)] = max(out.get(str(t), 0.0), float(w))
    return out


def main(out_dir):
    torch.manual_seed(0)
    config = transformers.XLMRobertaConfig(**CONFIG)
    config._attn_implementation = "eager"
    gen = torch.Generator().manual_seed(2024)
    model = transformers.XLMRobertaModel(config).eval()
    randomize(model, gen)
    sparse = head(config.hidden_size, 1, gen)
    colbert = head(config.hidden_size, config.hidden_size, gen)
    folder = os.path.join(out_dir, "xlm_roberta")
    os.makedirs(folder, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    model.to(torch.float32)
    for name, lin in (("sparse_linear", sparse), ("colbert_linear", colbert)):
        torch.save(lin.state_dict(), os.path.join(folder, name + ".pt"))
        save_file({k: v.to(torch.bfloat16).contiguous() for k, v in lin.state_dict().items()},
                  os.path.join(folder, name + ".safetensors"))

    seqs = sequences(gen, config.vocab_size)
    B, L = len(seqs), max(len(s) for s in seqs)
    ids = torch.full((B, L), PAD, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s)
        mask[b, :len(s)] = 1
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state  # [B, L, H]
        dense = torch.nn.functional.normalize(hidden[:, 0], dim=-1)
        token_weights = torch.relu(sparse(hidden)).squeeze(-1)  # [B, L]
        colbert_vecs = colbert(hidden[:, 1:]) * mask[:, 1:][:, :, None].float()
        colbert_vecs = torch.nn.functional.normalize(colbert_vecs, dim=-1)
    lens = [len(s) for s in seqs]
    tensors = {
        "last_hidden_state": torch.cat([hidden[b, :n] for b, n in enumerate(lens)]).contiguous(),
        "dense": dense.contiguous(),
        "sparse": torch.cat([token_weights[b, :n] for b, n in enumerate(lens)]).contiguous(),
        "colbert": torch.cat([colbert_vecs[b, :n - 1] for b, n in enumerate(lens)]).contiguous(),
    }
    save_file(tensors, os.path.join(folder, "golden.safetensors"))
    lexical = [lexical_weights(s, token_weights[b, :len(s)].tolist()) for b, s in enumerate(seqs)]
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump({"model": "XLMRobertaModel with BGE-M3's dense, sparse and colbert heads",
                   "transformers": transformers.__version__, "torch": torch.__version__,
                   "sequences": seqs, "lexical_weights": lexical,
                   "tensors": "golden.safetensors, float32: last_hidden_state [sum(n), H] and sparse [sum(n)] "
                              "packed over the sequences' tokens, dense [B, H], colbert [sum(n - 1), H]"}, f, indent=1)
    print("xlm_roberta ok", lens, sorted(os.listdir(folder)))
    print("weights:", sorted(k for k in model.state_dict()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
