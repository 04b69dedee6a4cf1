#!/usr/bin/env python3
"""Golden outputs from HF transformers for a small random-weight ColBERT: a BertModel and a
linear projection without bias, saved the way ColBERTv2's checkpoint is (its HF_ColBERT
class: "bert." tensors and "linear.weight" in one model.safetensors, model_type "bert").
The engine's tests (tests/models/encoder/colbert_golden_test.cpp and its GPU twin) load the
folder written here and compare.

The BERT has 2 layers of 128, 2 heads of 64 (so the CUDA attention kernel runs it too), 48
positions; the projection goes to 32. ColBERT's settings ride in config.json's "colbert"
object (query_maxlen 16, doc_maxlen 24 and the special ids of this small vocabulary: the
real ColBERTv2 takes bert-base-uncased's).

Queries and documents are formatted as ColBERT's QueryTokenizer and DocTokenizer do after
tokenizing "'. ' + text" (the '.' placeholder then overwritten by the marker):
  query: [CLS] [Q] t_1 .. t_k [SEP], truncated to query_maxlen, then padded to query_maxlen
         with [PAD] ids that are replaced by [MASK] ids; the attention mask stays 0 on the
         padding (attend_to_mask_tokens = False), so no token attends to a [MASK], yet every
         [MASK] row's output is one of the query's vectors.
  doc:   [CLS] [D] t_1 .. t_k [SEP], truncated to doc_maxlen, padded with [PAD] (mask 0).
Vectors (ColBERT.query / ColBERT.doc):
  Q = normalize(linear(bert(ids, mask).last_hidden_state))            every query row
  D = normalize(linear(bert(ids, mask).last_hidden_state) * keep)      keep = not [PAD] and
      not in the skiplist (the punctuation ids); only kept rows are the document's vectors
Scores: MaxSim, sum over query vectors of the max over the document's vectors of q . d.
Computed in float32 with eager attention on right-padded batches.

    python3 tests/data/models/encoders/make_colbert_goldens.py OUT_DIR
Writes OUT_DIR/colbert/: config.json, model.safetensors, golden.json, golden.safetensors.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

from make_goldens import randomize

PAD, Q_MARKER, D_MARKER, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4, 5, 6
SKIPLIST = [10, 11, 12, 13, 14]  # stand-ins for the punctuation marks' ids
COLBERT = dict(dim=32, query_maxlen=16, doc_maxlen=24, attend_to_mask_tokens=False, pad_token_id=PAD,
               cls_token_id=CLS, sep_token_id=SEP, mask_token_id=MASK, query_marker_id=Q_MARKER,
               doc_marker_id=D_MARKER, skiplist=SKIPLIST)
CONFIG = dict(vocab_size=128, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
              hidden_act="gelu", max_position_embeddings=48, type_vocab_size=2, layer_norm_eps=1e-12,
              pad_token_id=PAD, position_embedding_type="absolute")
# Content tokens per text: an empty query, short ones, one past query_maxlen (truncated);
# documents from empty to past doc_maxlen, some with skiplist ids.
QUERY_LENGTHS = [0, 1, 5, 13, 20]
DOC_LENGTHS = [0, 3, 10, 21, 30, 7]


class HfColbert(transformers.BertPreTrainedModel):
    """ColBERT's HF_ColBERT layout: self.bert and self.linear (no bias)."""

    def __init__(self, config, dim):
        super().__init__(config)
        self.bert = transformers.BertModel(config, add_pooling_layer=False)
        self.linear = torch.nn.Linear(config.hidden_size, dim, bias=False)
        self.post_init()


def texts(gen, lengths, vocab, with_punctuation):
    out = []
    for n in lengths:
        ids = torch.randint(15, vocab, (n,), generator=gen).tolist()
        if with_punctuation and n >= 3:
            ids[1] = SKIPLIST[n % len(SKIPLIST)]
            ids[-1] = SKIPLIST[0]
        out.append(ids)
    return out


def query_batch(qs):
    qm = COLBERT["query_maxlen"]
    ids = torch.full((len(qs), qm), PAD, dtype=torch.long)
    mask = torch.zeros((len(qs), qm), dtype=torch.long)
    for b, t in enumerate(qs):
        row = [CLS, Q_MARKER] + t[:qm - 3] + [SEP]
        ids[b, :len(row)] = torch.tensor(row)
        mask[b, :len(row)] = 1
    ids[ids == PAD] = MASK
    return ids, mask


def doc_batch(ds):
    dm = COLBERT["doc_maxlen"]
    rows = [[CLS, D_MARKER] + t[:dm - 3] + [SEP] for t in ds]
    L = max(len(r) for r in rows)
    ids = torch.full((len(ds), L), PAD, dtype=torch.long)
    mask = torch.zeros((len(ds), L), dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, :len(r)] = torch.tensor(r)
        mask[b, :len(r)] = 1
    return ids, mask


def main(out_dir):
    torch.manual_seed(0)
    config = transformers.BertConfig(**CONFIG)
    config._attn_implementation = "eager"
    gen = torch.Generator().manual_seed(2025)
    model = HfColbert(config, COLBERT["dim"]).eval()
    randomize(model, gen)
    folder = os.path.join(out_dir, "colbert")
    os.makedirs(folder, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    model.to(torch.float32)
    with open(os.path.join(folder, "config.json")) as f:
        saved = json.load(f)
    saved["architectures"] = ["HF_ColBERT"]
    saved["colbert"] = COLBERT
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(saved, f, indent=2)

    queries = texts(gen, QUERY_LENGTHS, config.vocab_size, with_punctuation=True)
    docs = texts(gen, DOC_LENGTHS, config.vocab_size, with_punctuation=True)
    q_ids, q_mask = query_batch(queries)
    d_ids, d_mask = doc_batch(docs)
    with torch.no_grad():
        q = model.linear(model.bert(input_ids=q_ids, attention_mask=q_mask).last_hidden_state)
        q = torch.nn.functional.normalize(q, p=2, dim=2)
        d = model.linear(model.bert(input_ids=d_ids, attention_mask=d_mask).last_hidden_state)
        keep = (d_ids != PAD) & ~torch.isin(d_ids, torch.tensor(SKIPLIST))
        d = torch.nn.functional.normalize(d * keep[:, :, None].float(), p=2, dim=2)
    doc_vectors = [d[b][keep[b]] for b in range(len(docs))]
    scores = torch.zeros((len(queries), len(docs)))
    for a in range(len(queries)):
        for b, dv in enumerate(doc_vectors):
            scores[a, b] = (q[a] @ dv.T).max(dim=1).values.sum() if len(dv) else 0.0
    tensors = {"query_vectors": q.reshape(-1, COLBERT["dim"]).contiguous(),
               "doc_vectors": torch.cat(doc_vectors).contiguous(), "scores": scores.contiguous()}
    save_file(tensors, os.path.join(folder, "golden.safetensors"))
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump({"model": "HF_ColBERT (BertModel + linear without bias) as ColBERT encodes and scores",
                   "transformers": transformers.__version__, "torch": torch.__version__,
                   "queries": queries, "documents": docs,
                   "query_ids": q_ids.tolist(), "doc_ids": [r[m.bool()].tolist() for r, m in zip(d_ids, d_mask)],
                   "doc_vector_counts": [len(v) for v in doc_vectors],
                   "tensors": "golden.safetensors, float32: query_vectors [B_q * query_maxlen, dim], doc_vectors "
                              "[sum of kept rows, dim] (documents in order), scores [B_q, B_d]"}, f, indent=1)
    print("colbert ok", [len(v) for v in doc_vectors], sorted(os.listdir(folder)))
    print("weights:", sorted(k for k in model.state_dict()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
