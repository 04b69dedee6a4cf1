#!/usr/bin/env python3
"""transformers' timing of a text encoder on the shapes of `fk bench embed`, for a
side-by-side figure on the same GPU in the same run.

Builds the model from the preset's config (`fk models config PRESET`, the config.json text
transformers reads) with its own random initialisation (the values do not change the
time), in the given dtype with PyTorch's SDPA attention, and times model(input_ids,
attention_mask) (for a ColBERT config, then its projection without bias and the L2
normalisation of every token's vector, as ColBERT.doc does) on B sequences of L random tokens (no padding: every sequence is L long,
as in `fk bench embed`): warm-up calls, then the median of timed calls, each between CUDA
events on the current stream with a synchronize after. Eager, and torch.compile with
--compile. Prints one JSON object (also written with --json).

Usage: python3 bench/encoder_peer_bench.py --fk build/bin/fk --model bge-m3 \\
           --batch-size 32 --seq-len 512 [--dtype f16] [--compile] [--json out.json]
"""
import argparse
import datetime
import json
import statistics
import subprocess

import torch
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fk", default="build/bin/fk")
    ap.add_argument("--model", default="bge-m3")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    config_text = subprocess.run([a.fk, "models", "config", a.model], check=True, capture_output=True,
                                 text=True).stdout
    config_json = json.loads(config_text)
    colbert = config_json.pop("colbert", None)
    if "HF_ColBERT" in config_json.get("architectures", []) and colbert is None:
        colbert = {"dim": 128}  # ColBERTv2's projection
    config = transformers.AutoConfig.for_model(**config_json)
    config._attn_implementation = "sdpa"
    dtype = torch.float16 if a.dtype == "f16" else torch.bfloat16
    encoder = transformers.AutoModel.from_config(config, add_pooling_layer=False).to("cuda", dtype).eval()
    model = encoder
    if colbert is not None:
        projection = torch.nn.Linear(config.hidden_size, colbert["dim"], bias=False).to("cuda", dtype)

        def model(input_ids, attention_mask):
            hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return torch.nn.functional.normalize(projection(hidden), p=2, dim=2)
    if a.compile:
        model = torch.compile(model)
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(4, config.vocab_size, (a.batch_size, a.seq_len), generator=gen)
    # The sequence's first and last tokens: RoBERTa's <s> ... </s>, BERT's [CLS] ... [SEP].
    ids[:, 0] = config.bos_token_id if config.bos_token_id is not None else 101
    ids[:, -1] = config.eos_token_id if config.eos_token_id is not None else 102
    ids = ids.to("cuda")
    mask = torch.ones_like(ids)

    times = []
    with torch.inference_mode():
        for it in range(a.warmup + a.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(input_ids=ids, attention_mask=mask)
            end.record()
            torch.cuda.synchronize()
            if it >= a.warmup:
                times.append(start.elapsed_time(end) / 1e3)
    med = statistics.median(times)
    out = {"bench": "embed peer", "library": f"transformers {transformers.__version__}, torch {torch.__version__}",
           "attention": "sdpa", "compile": a.compile, "colbert_projection": colbert is not None, "model": a.model, "dtype": a.dtype,
           "batch_size": a.batch_size, "seq_len": a.seq_len, "iters": a.iters, "median_forward_s": med,
           "forward_tokens_per_s": a.batch_size * a.seq_len / med, "forward_s": times,
           "device": torch.cuda.get_device_name(), "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
