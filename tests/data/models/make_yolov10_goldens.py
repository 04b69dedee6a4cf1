#!/usr/bin/env python3
"""Golden outputs of a tiny random YOLOv10 for the engine's golden test
(tests/models/vision/yolov10_golden_test.cpp).

No package with an acceptable licence ships YOLOv10, so the network is written here from
the paper (Wang et al., "YOLOv10: Real-Time End-to-End Object Detection", 2024) and its
public architecture description, with torch.nn.functional only: Conv (conv, BatchNorm in
eval mode with eps 1e-3, SiLU), C2f, C2fCIB (with RepVGGDW), SCDown, SPPF, PSA, nearest
upsampling, concatenation and the one-to-one v10Detect head (DFL over reg_max 16 bins,
anchors at grid-cell centres with strides 8 / 16 / 32, xyxy boxes, sigmoid scores, the
NMS-free top-k: the min(max_det, A) anchors of highest best-class score, then the
min(max_det, k * nc) highest (anchor, class) pairs among them).

The config is the engine's tiny-yolov10 preset: the n graph at width 0.125 (channels
8..128), 8 classes, 64 x 64 inputs. Weights are drawn from a seeded generator with enough
gain that the outputs depend on the image (conv filters uniform in +-sqrt(5.4 / fan_in),
BatchNorm scales in [0.8, 1.2), shifts and means in [-0.1, 0.1), variances in [0.5, 1.5)),
each on a 4-bit grid over its range (see Weights: the data stays small) under the upstream
state-dict names ("model.<i>.<submodule>..."); the test expands them into a float32
checkpoint of those names and loads it as any checkpoint. The training-only one-to-many
head and the DFL's fixed filter are left out (the engine does not read them). The images are float16-representable, so
the engine's float16 run sees exactly these values; the reference runs in float32 on the CPU.

Written to OUT/yolov10/: config.json, weights_u4.safetensors (packed 4-bit codes; the
metadata maps each name to "lo,hi,shape"), golden.safetensors (images [2, 3, 64, 64] NCHW float16, raw
[2, A, 64 + nc] float32 (the head output, anchors P3, P4, P5 row-major), boxes [2, K, 4],
scores [2, K], labels [2, K] int64).

    python3 tests/data/models/make_yolov10_goldens.py OUT_DIR    # OUT_DIR = tests/data/models
"""
import json
import math
import os
import sys

CONFIG = {"model_type": "yolov10", "scale": "n", "width_multiple": 0.125, "nc": 8, "imgsz": 64}
DEPTH, WIDTH, MAX_CHANNELS = 0.33, CONFIG["width_multiple"], 1024
NC, IMGSZ, REG_MAX, MAX_DET, BN_EPS = CONFIG["nc"], CONFIG["imgsz"], 16, 300, 1e-3
SEED = 20240523

# yolov10n.yaml: [from, repeats, module, args]
YAML = [
    [-1, 1, "Conv", [64, 3, 2]],
    [-1, 1, "Conv", [128, 3, 2]],
    [-1, 3, "C2f", [128, True]],
    [-1, 1, "Conv", [256, 3, 2]],
    [-1, 6, "C2f", [256, True]],
    [-1, 1, "SCDown", [512, 3, 2]],
    [-1, 6, "C2f", [512, True]],
    [-1, 1, "SCDown", [1024, 3, 2]],
    [-1, 3, "C2f", [1024, True]],
    [-1, 1, "SPPF", [1024, 5]],
    [-1, 1, "PSA", [1024]],
    [-1, 1, "Upsample", []],
    [[-1, 6], 1, "Concat", []],
    [-1, 3, "C2f", [512]],
    [-1, 1, "Upsample", []],
    [[-1, 4], 1, "Concat", []],
    [-1, 3, "C2f", [256]],
    [-1, 1, "Conv", [256, 3, 2]],
    [[-1, 13], 1, "Concat", []],
    [-1, 3, "C2f", [512]],
    [-1, 1, "SCDown", [512, 3, 2]],
    [[-1, 10], 1, "Concat", []],
    [-1, 3, "C2fCIB", [1024, True, True]],
    [[16, 19, 22], 1, "v10Detect", []],
]


def width(c):
    return int(math.ceil(min(c, MAX_CHANNELS) * WIDTH / 8) * 8)


def layers():
    """The yaml resolved: (index, module, from list, c_in, c_out, repeats, args)."""
    out, ch = [], []
    for i, (f, n, m, args) in enumerate(YAML):
        f = [f] if isinstance(f, int) else f
        f = [i + x if x < 0 else x for x in f]
        n = max(round(n * DEPTH), 1) if n > 1 else n
        c_in = ch[f[0]] if i else 3
        if m == "Concat":
            c_out = c_in = sum(ch[x] for x in f)
        elif m in ("Upsample", "v10Detect"):
            c_out = c_in
        else:
            c_out = width(args[0])
        out.append((i, m, f, c_in, c_out, n, args))
        ch.append(c_out)
    return out


class Weights:
    """Draws (and records) the state dict in module order. Each tensor is a 4-bit grid over
    its range, value = float32(lo + (hi - lo) * k / 14) for k in 0..14 computed in double:
    stored as packed nibbles (element 2i in the low nibble of byte i, 2i + 1 in the high
    one) with "lo,hi,d0xd1x..." in the file's metadata, and expanded bit-exactly by the
    golden test (an eighth of float32's bytes: the tiny model has ~750k weights)."""

    def __init__(self, torch):
        self.torch = torch
        self.gen = torch.Generator().manual_seed(SEED)
        self.sd, self.codes, self.ranges = {}, {}, {}

    def uniform(self, name, shape, lo, hi):
        torch = self.torch
        k = torch.randint(0, 15, shape, generator=self.gen)
        flat = k.flatten().to(torch.uint8)
        if flat.numel() % 2:
            flat = torch.cat((flat, flat.new_zeros(1)))
        self.codes[name] = (flat[0::2] | (flat[1::2] << 4)).contiguous()
        self.ranges[name] = f"{lo!r},{hi!r}," + "x".join(str(d) for d in shape)
        self.sd[name] = (lo + (hi - lo) * k.double() / 14).float()
        return self.sd[name]

    def conv(self, p, c1, c2, k, g=1):
        fan_in = (c1 // g) * k * k
        a = math.sqrt(5.4 / fan_in)
        self.uniform(p + "conv.weight", (c2, c1 // g, k, k), -a, a)
        self.uniform(p + "bn.weight", (c2,), 0.8, 1.2)
        self.uniform(p + "bn.bias", (c2,), -0.1, 0.1)
        self.uniform(p + "bn.running_mean", (c2,), -0.1, 0.1)
        self.uniform(p + "bn.running_var", (c2,), 0.5, 1.5)

    def plain(self, p, c1, c2):
        a = math.sqrt(5.4 / c1)
        self.uniform(p + "weight", (c2, c1, 1, 1), -a, a)
        self.uniform(p + "bias", (c2,), -0.1, 0.1)


def main():
    import torch
    import torch.nn.functional as F
    from safetensors.torch import save_file

    torch.manual_seed(SEED)
    W = Weights(torch)
    table = layers()
    ch = [l[4] for l in table]
    det_in = [ch[x] for x in table[-1][2]]
    c_box, c_cls = max(16, det_in[0] // 4, 4 * REG_MAX), max(det_in[0], min(NC, 100))

    # Draw every weight in module order.
    for i, m, f, c1, c2, n, args in table:
        p = f"model.{i}."
        if m == "Conv":
            W.conv(p, c1, c2, args[1])
        elif m == "SCDown":
            W.conv(p + "cv1.", c1, c2, 1)
            W.conv(p + "cv2.", c2, c2, args[1], g=c2)
        elif m in ("C2f", "C2fCIB"):
            h = c2 // 2
            W.conv(p + "cv1.", c1, 2 * h, 1)
            W.conv(p + "cv2.", (2 + n) * h, c2, 1)
            for j in range(n):
                q = f"{p}m.{j}."
                if m == "C2f":
                    W.conv(q + "cv1.", h, h, 3)
                    W.conv(q + "cv2.", h, h, 3)
                else:
                    W.conv(q + "cv1.0.", h, h, 3, g=h)
                    W.conv(q + "cv1.1.", h, 2 * h, 1)
                    if args[2]:  # RepVGGDW
                        W.conv(q + "cv1.2.conv.", 2 * h, 2 * h, 7, g=2 * h)
                        W.conv(q + "cv1.2.conv1.", 2 * h, 2 * h, 3, g=2 * h)
                    else:
                        W.conv(q + "cv1.2.", 2 * h, 2 * h, 3, g=2 * h)
                    W.conv(q + "cv1.3.", 2 * h, h, 1)
                    W.conv(q + "cv1.4.", h, h, 3, g=h)
        elif m == "SPPF":
            h = c1 // 2
            W.conv(p + "cv1.", c1, h, 1)
            W.conv(p + "cv2.", 4 * h, c2, 1)
        elif m == "PSA":
            h = c1 // 2
            heads = h // 64
            hd = h // heads
            kd = hd // 2
            W.conv(p + "cv1.", c1, 2 * h, 1)
            W.conv(p + "cv2.", 2 * h, c1, 1)
            W.conv(p + "attn.qkv.", h, h + 2 * heads * kd, 1)
            W.conv(p + "attn.proj.", h, h, 1)
            W.conv(p + "attn.pe.", h, h, 3, g=h)
            W.conv(p + "ffn.0.", h, 2 * h, 1)
            W.conv(p + "ffn.1.", 2 * h, h, 1)
        elif m == "v10Detect":
            for lv, x in enumerate(det_in):
                b, s = f"{p}one2one_cv2.{lv}.", f"{p}one2one_cv3.{lv}."
                W.conv(b + "0.", x, c_box, 3)
                W.conv(b + "1.", c_box, c_box, 3)
                W.plain(b + "2.", c_box, 4 * REG_MAX)
                W.conv(s + "0.0.", x, x, 3, g=x)
                W.conv(s + "0.1.", x, c_cls, 1)
                W.conv(s + "1.0.", c_cls, c_cls, 3, g=c_cls)
                W.conv(s + "1.1.", c_cls, c_cls, 1)
                W.plain(s + "2.", c_cls, NC)
            # The DFL's fixed filter (0..15) is not stored: the engine does not read it and the
            # reference's decode uses the same bin indices.
    sd = W.sd

    def conv(p, x, s=1, g=1, act=True):
        w = sd[p + "conv.weight"]
        y = F.conv2d(x, w, None, s, w.shape[-1] // 2, 1, g)
        y = F.batch_norm(y, sd[p + "bn.running_mean"], sd[p + "bn.running_var"], sd[p + "bn.weight"],
                         sd[p + "bn.bias"], False, 0.0, BN_EPS)
        return F.silu(y) if act else y

    def c2f(p, x, n, shortcut, cib, lk):
        y = list(conv(p + "cv1.", x).chunk(2, 1))
        for j in range(n):
            q, z = f"{p}m.{j}.", y[-1]
            if not cib:
                o = conv(q + "cv2.", conv(q + "cv1.", z))
            else:
                t = conv(q + "cv1.0.", z, g=z.shape[1])
                t = conv(q + "cv1.1.", t)
                if lk:
                    t = F.silu(conv(q + "cv1.2.conv.", t, g=t.shape[1], act=False) +
                               conv(q + "cv1.2.conv1.", t, g=t.shape[1], act=False))
                else:
                    t = conv(q + "cv1.2.", t, g=t.shape[1])
                t = conv(q + "cv1.3.", t)
                o = conv(q + "cv1.4.", t, g=t.shape[1])
            y.append(z + o if shortcut else o)
        return conv(p + "cv2.", torch.cat(y, 1))

    def psa(p, x):
        c = x.shape[1] // 2
        a, b = conv(p + "cv1.", x).split((c, c), dim=1)
        bsz, _, hh, ww = b.shape
        heads = c // 64
        hd = c // heads
        kd = hd // 2
        qkv = conv(p + "attn.qkv.", b, act=False).view(bsz, heads, 2 * kd + hd, hh * ww)
        q, k, v = qkv.split([kd, kd, hd], dim=2)
        attn = ((q.transpose(-2, -1) @ k) * kd ** -0.5).softmax(dim=-1)
        y = (v @ attn.transpose(-2, -1)).view(bsz, c, hh, ww)
        y = y + conv(p + "attn.pe.", v.reshape(bsz, c, hh, ww), g=c, act=False)
        b = b + conv(p + "attn.proj.", y, act=False)
        b = b + conv(p + "ffn.1.", conv(p + "ffn.0.", b), act=False)
        return conv(p + "cv2.", torch.cat((a, b), 1))

    def forward(x):
        ys = []
        for i, m, f, c1, c2, n, args in table:
            p, inp = f"model.{i}.", (ys[f[0]] if i else x)
            if m == "Conv":
                y = conv(p, inp, s=args[2])
            elif m == "SCDown":
                y = conv(p + "cv2.", conv(p + "cv1.", inp), s=args[2], g=c2, act=False)
            elif m == "C2f":
                y = c2f(p, inp, n, len(args) > 1 and args[1], False, False)
            elif m == "C2fCIB":
                y = c2f(p, inp, n, args[1], True, args[2])
            elif m == "SPPF":
                parts = [conv(p + "cv1.", inp)]
                for _ in range(3):
                    parts.append(F.max_pool2d(parts[-1], args[1], 1, args[1] // 2))
                y = conv(p + "cv2.", torch.cat(parts, 1))
            elif m == "PSA":
                y = psa(p, inp)
            elif m == "Upsample":
                y = F.interpolate(inp, scale_factor=2, mode="nearest")
            elif m == "Concat":
                y = torch.cat([ys[j] for j in f], 1)
            else:  # v10Detect, one-to-one branch
                outs = []
                for lv, j in enumerate(f):
                    z = ys[j]
                    b, s = f"{p}one2one_cv2.{lv}.", f"{p}one2one_cv3.{lv}."
                    bx = conv(b + "1.", conv(b + "0.", z))
                    bx = F.conv2d(bx, sd[b + "2.weight"], sd[b + "2.bias"])
                    cl = conv(s + "0.1.", conv(s + "0.0.", z, g=z.shape[1]))
                    cl = conv(s + "1.1.", conv(s + "1.0.", cl, g=cl.shape[1]))
                    cl = F.conv2d(cl, sd[s + "2.weight"], sd[s + "2.bias"])
                    outs.append(torch.cat((bx, cl), 1).flatten(2))
                return torch.cat(outs, 2).transpose(1, 2).contiguous(), [ys[j].shape[-1] for j in f]
            ys.append(y)

    def decode(raw, grids):
        n, a, _ = raw.shape
        box, cls = raw[..., :4 * REG_MAX], raw[..., 4 * REG_MAX:]
        dist = (box.reshape(n, a, 4, REG_MAX).softmax(-1) * torch.arange(REG_MAX, dtype=raw.dtype)).sum(-1)
        anchors, strides = [], []
        for g in grids:
            s = IMGSZ // g
            yy, xx = torch.meshgrid(torch.arange(g) + 0.5, torch.arange(g) + 0.5, indexing="ij")
            anchors.append(torch.stack((xx, yy), -1).view(-1, 2))
            strides.append(torch.full((g * g, 1), float(s)))
        anchors, strides = torch.cat(anchors), torch.cat(strides)
        lt, rb = dist[..., :2], dist[..., 2:]
        boxes = torch.cat((anchors - lt, anchors + rb), -1) * strides
        return boxes, cls.sigmoid()

    def select(boxes, scores):
        n, a, nc = scores.shape
        k1 = min(MAX_DET, a)
        idx = scores.amax(-1).topk(k1, dim=-1)[1].unsqueeze(-1)
        boxes = boxes.gather(1, idx.repeat(1, 1, 4))
        scores = scores.gather(1, idx.repeat(1, 1, nc))
        k2 = min(MAX_DET, k1 * nc)
        top, flat = scores.flatten(1).topk(k2, dim=-1)
        labels = flat % nc
        boxes = boxes.gather(1, (flat // nc).unsqueeze(-1).repeat(1, 1, 4))
        return boxes, top, labels

    images = torch.rand((2, 3, IMGSZ, IMGSZ), generator=W.gen).half().float()  # in [0, 1], float16 values
    with torch.no_grad():
        raw, grids = forward(images)
        boxes, scores = decode(raw, grids)
        det_boxes, det_scores, det_labels = select(boxes, scores)

    out = os.path.join(sys.argv[1], "yolov10")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    save_file({k: v.contiguous() for k, v in W.codes.items()}, os.path.join(out, "weights_u4.safetensors"),
              metadata=W.ranges)
    save_file({"images": images.half().contiguous(), "raw": raw.contiguous(), "boxes": det_boxes.contiguous(),
               "scores": det_scores.contiguous(), "labels": det_labels.contiguous()},
              os.path.join(out, "golden.safetensors"))
    params = sum(v.numel() for v in sd.values())
    print(f"wrote {out}: {params} weights, raw {tuple(raw.shape)}, {det_scores.shape[1]} detections per image")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main()
