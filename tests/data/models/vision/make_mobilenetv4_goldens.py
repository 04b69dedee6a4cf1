"""Golden data for the engine's MobileNetV4 (src/models/vision/mobilenetv4/).

Builds timm's MobileNetV4 conv_small or conv_medium graph (timm's own arch def, captured
from _gen_mobilenet_v4) at the tiny presets' config: channel multiplier 0.25, a 128-wide
head (timm fixes it at 1280; the smaller head keeps the data small), 10 classes, 64 x 64
images. Weights are random from a fixed generator, BatchNorm running statistics
non-trivial, every tensor rounded to bf16 (so the engine's bf16 copy is exact) and saved as
float32 under timm's names. Writes, into the output folder (default: mobilenetv4/ for conv_small,
mobilenetv4_medium/ for conv_medium, beside this script):
  config.json         the engine's config of this model
  model.safetensors   the state dict (timm's names; num_batches_tracked left out; float32 for
                      conv_small, bfloat16 for conv_medium)
  golden.safetensors  images [N, 64, 64, 3] (NHWC, normalised, bf16 values as float32),
                      pooled [N, C] (global average pool of the last block), logits [N, 10]
                      (float32, eval mode)

Usage: python3 make_mobilenetv4_goldens.py [conv_small|conv_medium] [out_dir]
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from timm.models import mobilenetv3 as mnv3

FOLDERS = {"conv_small": "mobilenetv4", "conv_medium": "mobilenetv4_medium"}
CONFIG = {
    "model_type": "mobilenetv4",
    "variant": "conv_small",  # or the first argument
    "channel_multiplier": 0.25,
    "num_features": 128,
    "num_classes": 10,
    "image_size": 64,
}
IMAGES = 3
SEED = 20240611


def build_model():
    """timm's CONFIG variant at CONFIG's multiplier, with CONFIG's head width and classes."""
    captured = {}
    original = mnv3._create_mnv3

    def capture(variant, pretrained=False, **kwargs):
        captured.update(kwargs)
        return None

    mnv3._create_mnv3 = capture
    try:
        mnv3._gen_mobilenet_v4("mobilenetv4_" + CONFIG["variant"], CONFIG["channel_multiplier"])
    finally:
        mnv3._create_mnv3 = original
    captured["num_features"] = CONFIG["num_features"]
    captured["num_classes"] = CONFIG["num_classes"]
    return mnv3.MobileNetV3(**captured)


def randomise(model, gen):
    """He-scaled convs, BatchNorm affine and running statistics away from identity."""
    bf16 = lambda t: t.to(torch.bfloat16).to(torch.float32)
    with torch.no_grad():
        for name, p in model.state_dict().items():
            if name.endswith("num_batches_tracked"):
                continue
            if p.dim() == 4:
                fan_in = p.shape[1] * p.shape[2] * p.shape[3]
                # A residual branch's last conv at a tenth of the He gain, as the engine's
                # dummy weights: conv_medium's 20 residual blocks would otherwise double the
                # stream's power each, far past bf16's precision for the pooled features.
                branch_end = name.endswith("pw_proj.conv.weight") or name.endswith("conv_pwl.weight")
                v = torch.randn(p.shape, generator=gen) * ((0.2 if branch_end else 2.0) / fan_in) ** 0.5
            elif name == "classifier.weight":
                v = torch.randn(p.shape, generator=gen) * (1.0 / p.shape[1]) ** 0.5
            elif name.endswith("running_var"):
                v = 0.5 + torch.rand(p.shape, generator=gen)
            elif name.endswith("running_mean"):
                v = 0.2 * torch.randn(p.shape, generator=gen)
            elif name.endswith(".weight"):  # BatchNorm scale
                v = 0.8 + 0.4 * torch.rand(p.shape, generator=gen)
            else:  # BatchNorm shift, classifier bias
                v = 0.1 * torch.randn(p.shape, generator=gen)
            p.copy_(bf16(v))


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else "conv_small"
    if variant not in FOLDERS:
        raise SystemExit(f"variant must be one of {', '.join(FOLDERS)}, got {variant}")
    CONFIG["variant"] = variant
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, FOLDERS[variant])
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator().manual_seed(SEED)
    model = build_model().eval()
    randomise(model, gen)
    s = CONFIG["image_size"]
    images = torch.randn(IMAGES, s, s, 3, generator=gen).to(torch.bfloat16).to(torch.float32)
    with torch.no_grad():
        x = images.permute(0, 3, 1, 2).contiguous()
        features = model.forward_features(x)
        pooled = features.mean(dim=(2, 3))
        logits = model.forward_head(features)
    # conv_medium's state dict is stored in bf16 (its values are bf16 already; half the
    # bytes), conv_small's in float32 as timm's checkpoints: the engine reads either.
    store = torch.bfloat16 if variant == "conv_medium" else torch.float32
    state = {k: v.to(store).contiguous() for k, v in model.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    save_file(state, os.path.join(out, "model.safetensors"))
    save_file({"images": images.contiguous(), "pooled": pooled.contiguous(), "logits": logits.contiguous()},
              os.path.join(out, "golden.safetensors"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")
    print("logits", logits)
    print("pooled rms", pooled.pow(2).mean().sqrt().item(), "logit rms", logits.pow(2).mean().sqrt().item())


if __name__ == "__main__":
    main()
