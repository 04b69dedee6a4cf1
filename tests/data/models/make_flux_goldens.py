#!/usr/bin/env python3
"""Golden data of a tiny random FLUX.1 transformer (diffusers' FluxTransformer2DModel) and
of FluxPipeline's flow-match Euler loop, for the engine's golden test
(tests/models/diffusion/flux_golden_test.cpp).

The transformer has the engine's tiny-flux config (src/models/diffusion/registrations.cpp):
2 double-stream + 2 single-stream blocks of 128, 2 heads of 64, RoPE axes 16/24/24,
16 latent channels, guidance embedded. Every parameter is drawn at random (RMSNorm weights
around one, so that the q/k norms matter) and rounded to bfloat16 values, as are all
inputs, so the engine (which runs bf16) loads exactly the numbers diffusers ran in float32.

Timesteps and guidance scales are chosen so that diffusers' `t.to(dtype) * 1000` is exact
in bfloat16 too (0.25, 0.5, 1.0; guidance 2 and 4): the sinusoidal embedding's fastest
channels turn once per unit of 1000 t, so a rounded timestep would differ there by design.
For the same reason the two-step loop runs with FLUX.1-schnell's scheduler config (no
dynamic shifting, shift 1), whose sigmas for two steps are exactly 1 and 0.5; the dynamic
shift of FLUX.1-dev's config is checked through its sigmas alone (28 steps at 1024x1024,
4 steps at this image size).

Written to OUT/flux/, in a diffusers pipeline's layout (so that `fk denoise --model
OUT/flux/transformer` finds the scheduler beside it):
  transformer/config.json                         the transformer config
  transformer/diffusion_pytorch_model.safetensors the weights (float32 holding bf16 values)
  scheduler/scheduler_config.json                 FLUX.1-schnell's scheduler config (the loop's)
  golden.safetensors                              inputs and outputs (float32), see golden.json
  golden.json                                     sizes, scales, versions, what each tensor is

    python3 tests/data/models/make_flux_goldens.py OUT_DIR    # OUT_DIR = tests/data/models

Runs on the CPU in float32 (torch 2.11, diffusers 0.42.1).
"""
import json
import os
import sys

import numpy as np
import torch
import diffusers
from diffusers import FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel
from diffusers.pipelines.flux.pipeline_flux import calculate_shift
from safetensors.torch import save_file

CONFIG = {
    "_class_name": "FluxTransformer2DModel",
    "attention_head_dim": 64,
    "axes_dims_rope": [16, 24, 24],
    "guidance_embeds": True,
    "in_channels": 16,
    "joint_attention_dim": 32,
    "num_attention_heads": 2,
    "num_layers": 2,
    "num_single_layers": 2,
    "patch_size": 1,
    "pooled_projection_dim": 24,
}
# black-forest-labs/FLUX.1-dev and FLUX.1-schnell scheduler/scheduler_config.json.
DEV_SCHEDULER = {
    "_class_name": "FlowMatchEulerDiscreteScheduler",
    "base_image_seq_len": 256, "base_shift": 0.5, "max_image_seq_len": 4096, "max_shift": 1.15,
    "num_train_timesteps": 1000, "shift": 3.0, "use_dynamic_shifting": True,
}
SCHNELL_SCHEDULER = {
    "_class_name": "FlowMatchEulerDiscreteScheduler",
    "base_image_seq_len": 256, "base_shift": 0.5, "max_image_seq_len": 4096, "max_shift": 1.15,
    "num_train_timesteps": 1000, "shift": 1.0, "use_dynamic_shifting": False,
}
BATCH = 2
TEXT_LEN = 8
GRID = (4, 6)  # latent patch rows x columns: a 64 x 96 pixel image
TIMESTEPS = [0.25, 0.5]  # the forward's timestep (sigma) per sample
GUIDANCE = [4.0, 2.0]
LOOP_STEPS = 2
LOOP_GUIDANCE = 4.0
SEED = 20260601


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def randn(gen, *shape):
    return bf16(torch.randn(*shape, generator=gen))


def image_ids(rows, cols):
    """FluxPipeline._prepare_latent_image_ids: (0, row, column) per packed token."""
    ids = torch.zeros(rows, cols, 3)
    ids[..., 1] += torch.arange(rows)[:, None]
    ids[..., 2] += torch.arange(cols)[None, :]
    return ids.reshape(rows * cols, 3)


def flux_sigmas(scheduler_config, steps, image_seq_len):
    """The sigmas FluxPipeline sets for `steps` steps at `image_seq_len` packed tokens."""
    s = FlowMatchEulerDiscreteScheduler.from_config(scheduler_config)
    sigmas = np.linspace(1.0, 1 / steps, steps)
    mu = calculate_shift(image_seq_len, s.config.get("base_image_seq_len", 256), s.config.get("max_image_seq_len", 4096),
                         s.config.get("base_shift", 0.5), s.config.get("max_shift", 1.15))
    s.set_timesteps(sigmas=sigmas, mu=mu)
    return s, mu


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)), "flux")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)

    model = FluxTransformer2DModel(**{k: v for k, v in CONFIG.items() if not k.startswith("_")}).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("norm_q.weight", "norm_k.weight", "norm_added_q.weight", "norm_added_k.weight")):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            else:  # keep torch's fan-in scaled init, with some spread in the biases
                p.add_(0.02 * torch.randn(p.shape, generator=gen))
            p.copy_(bf16(p))
    model.save_pretrained(os.path.join(out, "transformer"), safe_serialization=True)
    with open(os.path.join(out, "transformer", "config.json"), "w") as f:  # the engine's config text, exactly
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    os.makedirs(os.path.join(out, "scheduler"), exist_ok=True)
    with open(os.path.join(out, "scheduler", "scheduler_config.json"), "w") as f:
        json.dump(SCHNELL_SCHEDULER, f, indent=2)
        f.write("\n")

    rows, cols = GRID
    li = rows * cols
    tensors = {}
    with torch.no_grad():
        # 1. One transformer forward: two samples, different timesteps and guidance.
        hidden = randn(gen, BATCH, li, CONFIG["in_channels"])
        prompt = randn(gen, BATCH, TEXT_LEN, CONFIG["joint_attention_dim"])
        pooled = randn(gen, BATCH, CONFIG["pooled_projection_dim"])
        txt_ids = torch.zeros(TEXT_LEN, 3)
        img_ids = image_ids(rows, cols)
        timestep = torch.tensor(TIMESTEPS, dtype=torch.float32)
        guidance = torch.tensor(GUIDANCE, dtype=torch.float32)
        sample = model(hidden_states=hidden, encoder_hidden_states=prompt, pooled_projections=pooled,
                       timestep=timestep, img_ids=img_ids, txt_ids=txt_ids, guidance=guidance,
                       return_dict=False)[0]
        tensors.update(hidden_states=hidden, encoder_hidden_states=prompt, pooled_projections=pooled,
                       timestep=timestep, guidance=guidance, txt_ids=txt_ids, img_ids=img_ids, sample=sample)

        # 2. FluxPipeline's denoising loop (its step 6), batch 1, the schnell scheduler.
        scheduler, _ = flux_sigmas(SCHNELL_SCHEDULER, LOOP_STEPS, li)
        scheduler.set_begin_index(0)
        latents = randn(gen, 1, li, CONFIG["in_channels"])
        loop_prompt = randn(gen, 1, TEXT_LEN, CONFIG["joint_attention_dim"])
        loop_pooled = randn(gen, 1, CONFIG["pooled_projection_dim"])
        tensors.update(loop_latents_in=latents.clone(), loop_prompt=loop_prompt, loop_pooled=loop_pooled)
        loop_guidance = torch.full([1], LOOP_GUIDANCE, dtype=torch.float32).expand(1)
        for t in scheduler.timesteps:
            ts = t.expand(latents.shape[0]).to(latents.dtype)
            noise_pred = model(hidden_states=latents, timestep=ts / 1000, guidance=loop_guidance,
                               pooled_projections=loop_pooled, encoder_hidden_states=loop_prompt, txt_ids=txt_ids,
                               img_ids=img_ids, return_dict=False)[0]
            latents = scheduler.step(noise_pred, t, latents, return_dict=False)[0]
        tensors.update(loop_latents=latents, loop_sigmas=scheduler.sigmas.clone())

        # 3. FLUX.1-dev's dynamically shifted sigmas: 28 steps at 1024x1024, 4 at this size.
        dev28, mu28 = flux_sigmas(DEV_SCHEDULER, 28, 4096)
        dev4, mu4 = flux_sigmas(DEV_SCHEDULER, 4, li)
        tensors.update(dev_sigmas_28_4096=dev28.sigmas.clone(), dev_sigmas_4=dev4.sigmas.clone())

    save_file({k: v.contiguous().to(torch.float32) for k, v in tensors.items()}, os.path.join(out, "golden.safetensors"))
    meta = {
        "batch": BATCH, "text_len": TEXT_LEN, "grid": list(GRID), "image_seq_len": li,
        "timestep": TIMESTEPS, "guidance": GUIDANCE,
        "loop": {"steps": LOOP_STEPS, "guidance": LOOP_GUIDANCE, "height": rows * 16, "width": cols * 16,
                 "scheduler": "scheduler/scheduler_config.json"},
        "dev_scheduler": DEV_SCHEDULER, "dev_mu": {"4096": mu28, str(li): mu4},
        "tensors": {
            "hidden_states, encoder_hidden_states, pooled_projections, timestep, guidance, txt_ids, img_ids":
                "the forward's inputs ([B, L, C] as diffusers takes them; timestep is sigma)",
            "sample": "the forward's output [B, Li, C]",
            "loop_latents_in, loop_prompt, loop_pooled": "the loop's initial packed latents and prompt embeddings",
            "loop_latents": "the packed latents after the loop", "loop_sigmas": "the loop's sigmas",
            "dev_sigmas_28_4096, dev_sigmas_4": "FLUX.1-dev's scheduler sigmas (28 steps at 4096 tokens; 4 at Li)",
        },
        "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__},
        "seed": SEED,
    }
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
