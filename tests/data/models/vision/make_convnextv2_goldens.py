"""Golden data for the engine's ConvNeXt V2 (src/models/vision/convnextv2/).

Builds transformers' ConvNextV2ForImageClassification at the tiny preset's config (depths
1-1-2-1, widths 8-16-24-32, 64 x 64 images, 10 classes) with random weights from a fixed
generator (the GRN's gamma and beta too, which upstream initialises to zero), every tensor
rounded to bf16 (so the engine's bf16 copy is exact) and stored in bf16 under transformers'
names. Writes, into the output folder (default: convnextv2/ beside this script):
  config.json         the model's config as transformers writes it
  model.safetensors   the state dict (bfloat16)
  golden.safetensors  images [N, 64, 64, 3] (NHWC, normalised, bf16 values as float32),
                      pooled [N, 32] (the pooler output: mean over pixels, then the final
                      LayerNorm), logits [N, 10] (float32, eval mode)

Usage: python3 make_convnextv2_goldens.py [out_dir]
"""
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import ConvNextV2Config, ConvNextV2ForImageClassification

IMAGES = 3
SEED = 20250214


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "convnextv2")
    os.makedirs(out, exist_ok=True)
    config = ConvNextV2Config(depths=[1, 1, 2, 1], hidden_sizes=[8, 16, 24, 32], image_size=64, num_labels=10)
    model = ConvNextV2ForImageClassification(config).eval()
    gen = torch.Generator().manual_seed(SEED)
    bf16 = lambda t: t.to(torch.bfloat16).to(torch.float32)
    with torch.no_grad():
        for name, p in model.state_dict().items():
            if name.endswith("layernorm.weight") or name.endswith("downsampling_layer.0.weight"):
                v = 0.8 + 0.4 * torch.rand(p.shape, generator=gen)
            elif p.dim() >= 2 and not name.endswith("grn.weight"):
                fan_in = p[0].numel()
                gain = 0.1 if name.endswith("pwconv2.weight") else 1.0
                v = torch.randn(p.shape, generator=gen) * (gain / fan_in) ** 0.5
            else:  # biases, LayerNorm shifts, the GRN's gamma and beta
                v = 0.1 * torch.randn(p.shape, generator=gen)
            p.copy_(bf16(v))
    s = config.image_size
    images = torch.randn(IMAGES, s, s, 3, generator=gen).to(torch.bfloat16).to(torch.float32)
    with torch.no_grad():
        o = model.convnextv2(images.permute(0, 3, 1, 2).contiguous())
        logits = model.classifier(o.pooler_output)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()},
              os.path.join(out, "model.safetensors"))
    save_file({"images": images.contiguous(), "pooled": o.pooler_output.contiguous(), "logits": logits.contiguous()},
              os.path.join(out, "golden.safetensors"))
    config.save_pretrained(out)
    print("logits", logits)
    print("pooled rms", o.pooler_output.pow(2).mean().sqrt().item(), "logit rms", logits.pow(2).mean().sqrt().item())


if __name__ == "__main__":
    main()
