#!/usr/bin/env python3
"""Writes tasks/vision/*.json: the conv family's tasks from YOLOv10n's layers at 640x640.

YOLOv10n is not yet a model of the engine, so `fk capture` cannot record its calls. Until
it can, the shapes come from the network's layer table below (the YOLOv10-N architecture:
width multiple 0.25, depth multiple 0.33, 80 classes, BatchNorm folded into every Conv,
the one-to-one detection head that inference runs), each called once per forward pass, at
batch 1 (latency) and batch 32 (throughput), fp16. Each task keeps the shapes that carry
most of the op's estimated time (a roofline estimate on an H100: the larger of bytes over
3.0 TB/s and flops over 700 TFLOP/s for tensor-core convolutions, 60 TFLOP/s for depthwise
ones), most first, up to MAX_TIMED per batch size; a label gives the layers and the share.
Once the model runs in the engine, its captures replace this table (tasks/generate.py).

Re-run after changing the table: python3 tasks/vision/make_tasks.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = (1, 32)
MAX_TIMED = 10  # per batch size
BANDWIDTH = 3.0e12
MMA_RATE = 700e12
SIMT_RATE = 60e12
CATEGORY = "edge-detection"
ARCH = "yolov10n"


def conv(name, hw, c, k, kernel=1, stride=1, groups=1, act=True, residual=False):
    """residual: the layer's output is a shortcut's sum (conv2d adds it in its epilogue)."""
    return {"layer": name, "hw": hw, "c": c, "k": k, "kernel": kernel, "stride": stride, "groups": groups,
            "act": act, "residual": residual}


def dw(name, hw, c, kernel=3, stride=1, act=True, residual=False):
    return conv(name, hw, c, c, kernel, stride, c, act, residual)


def c2f(name, hw, c1, c2, n, shortcut):
    """C2f: cv1 1x1 to 2c, n bottlenecks of two 3x3 convs on c (the second adds the shortcut
    where the block has one: the backbone's), cv2 1x1 from (2 + n) c."""
    c = c2 // 2
    layers = [conv(f"{name}.cv1", hw, c1, 2 * c)]
    for i in range(n):
        layers += [conv(f"{name}.m.{i}.cv1", hw, c, c, 3), conv(f"{name}.m.{i}.cv2", hw, c, c, 3, residual=shortcut)]
    return layers + [conv(f"{name}.cv2", hw, (2 + n) * c, c2)]


def scdown(name, hw, c1, c2):
    """SCDown: a 1x1 to c2, then a depthwise 3x3 stride 2 without activation."""
    return [conv(f"{name}.cv1", hw, c1, c2), dw(f"{name}.cv2", hw, c2, 3, 2, act=False)]


def conv_layers():
    L = [conv("model.0", 640, 3, 16, 3, 2), conv("model.1", 320, 16, 32, 3, 2)]
    L += c2f("model.2", 160, 32, 32, 1, True)
    L += [conv("model.3", 160, 32, 64, 3, 2)]
    L += c2f("model.4", 80, 64, 64, 2, True)
    L += scdown("model.5", 80, 64, 128)
    L += c2f("model.6", 40, 128, 128, 2, True)
    L += scdown("model.7", 40, 128, 256)
    L += c2f("model.8", 20, 256, 256, 1, True)
    L += [conv("model.9.cv1", 20, 256, 128), conv("model.9.cv2", 20, 512, 256)]  # SPPF
    # PSA: cv1, attention (qkv 1x1, positional depthwise 3x3 on v, proj 1x1), FFN, cv2; the
    # attention's and the FFN's outputs are added to their input (residuals).
    L += [conv("model.10.cv1", 20, 256, 256), conv("model.10.attn.qkv", 20, 128, 256, act=False),
          dw("model.10.attn.pe", 20, 128, act=False), conv("model.10.attn.proj", 20, 128, 128, act=False, residual=True),
          conv("model.10.ffn.0", 20, 128, 256), conv("model.10.ffn.1", 20, 256, 128, act=False, residual=True),
          conv("model.10.cv2", 20, 256, 256)]
    L += c2f("model.13", 40, 384, 128, 1, False)
    L += c2f("model.16", 80, 192, 64, 1, False)
    L += [conv("model.17", 80, 64, 64, 3, 2)]
    L += c2f("model.19", 40, 192, 128, 1, False)
    L += scdown("model.20", 40, 128, 128)
    # C2fCIB with a large-kernel CIB: dw 3x3, 1x1 up, RepVGGDW (7x7 + 3x3 depthwise fused
    # into one 7x7 at load), 1x1 down, dw 3x3 plus the CIB's shortcut.
    L += [conv("model.22.cv1", 20, 384, 256), dw("model.22.m.0.cv1.0", 20, 128),
          conv("model.22.m.0.cv1.1", 20, 128, 256), dw("model.22.m.0.cv1.2", 20, 256, 7),
          conv("model.22.m.0.cv1.3", 20, 256, 128), dw("model.22.m.0.cv1.4", 20, 128, residual=True),
          conv("model.22.cv2", 20, 384, 256)]
    # v10Detect's one-to-one head: box branch (two 3x3 to 64, a 1x1 to 4 x 16 DFL bins) and
    # class branch (dw 3x3, 1x1 to 80, dw 3x3, 1x1, a 1x1 to the 80 classes) per level.
    for i, (hw, ch) in enumerate(((80, 64), (40, 128), (20, 256))):
        h = f"model.23.one2one"
        L += [conv(f"{h}_cv2.{i}.0", hw, ch, 64, 3), conv(f"{h}_cv2.{i}.1", hw, 64, 64, 3),
              conv(f"{h}_cv2.{i}.2", hw, 64, 64, act=False),
              dw(f"{h}_cv3.{i}.0.0", hw, ch), conv(f"{h}_cv3.{i}.0.1", hw, ch, 80),
              dw(f"{h}_cv3.{i}.1.0", hw, 80), conv(f"{h}_cv3.{i}.1.1", hw, 80, 80),
              conv(f"{h}_cv3.{i}.2", hw, 80, 80, act=False)]
    return L


def conv_shape(l, batch):
    s = {"batch": batch, "height": l["hw"], "width": l["hw"], "in_channels": l["c"], "out_channels": l["k"],
         "kernel": l["kernel"], "stride": l["stride"], "dtype": "f16"}
    if l["groups"] != 1:
        s["groups"] = l["groups"]
    if not l["act"]:
        s["activation"] = "none"
    if l["residual"]:
        s["residual"] = True
    return s


def conv_seconds(l, batch):
    out_hw = (l["hw"] - 1) // l["stride"] + 1
    macs = batch * out_hw * out_hw * l["k"] * l["kernel"] ** 2 * l["c"] // l["groups"]
    outputs = (2 if l["residual"] else 1) * batch * out_hw ** 2 * l["k"]  # the residual read too
    bytes_ = 2 * (batch * l["hw"] ** 2 * l["c"] + outputs + l["k"] * l["kernel"] ** 2 * l["c"])
    rate = SIMT_RATE if l["groups"] > 1 else MMA_RATE
    return max(bytes_ / BANDWIDTH, 2 * macs / rate)


def other_calls():
    """(op, shape without batch, layer) of the pooling, upsampling and concatenations."""
    calls = [("max_pool2d", {"height": 20, "width": 20, "channels": 128, "kernel": 5, "stride": 1, "padding": 2},
              f"model.9.m (SPPF pass {i})") for i in range(3)]
    calls += [("upsample_nearest2d", {"height": 20, "width": 20, "channels": 256, "scale": 2}, "model.11"),
              ("upsample_nearest2d", {"height": 40, "width": 40, "channels": 128, "scale": 2}, "model.14")]
    cat = lambda hw, chans: {"height": hw, "width": hw, "channels": chans}
    calls += [("concat_channels", cat(40, [256, 128]), "model.12"), ("concat_channels", cat(80, [128, 64]), "model.15"),
              ("concat_channels", cat(40, [64, 128]), "model.18"), ("concat_channels", cat(20, [128, 256]), "model.21"),
              ("concat_channels", cat(20, [128] * 4), "model.9 (SPPF)")]
    # C2f's concatenation of its split halves and bottleneck outputs: free when the producers
    # write channel slices of one buffer, a concat_channels call otherwise.
    for name, hw, c, n in (("model.2", 160, 16, 1), ("model.4", 80, 32, 2), ("model.6", 40, 64, 2),
                           ("model.8", 20, 128, 1), ("model.13", 40, 64, 1), ("model.16", 80, 32, 1),
                           ("model.19", 40, 64, 1), ("model.22", 20, 128, 1)):
        calls.append(("concat_channels", cat(hw, [c] * (2 + n)), f"{name} (C2f)"))
    return calls


def copy_seconds(op, s, batch):
    px = s["height"] * s["width"]
    ch = sum(s["channels"]) if isinstance(s["channels"], list) else s["channels"]
    scale = s.get("scale", 1) ** 2
    return 2 * batch * px * ch * (1 + scale) / BANDWIDTH


def pick(entries):
    """entries: (shape, layer, seconds). Equal shapes merge; the heaviest kept."""
    merged = {}
    for shape, layer, sec in entries:
        key = json.dumps(shape, sort_keys=True)
        m = merged.setdefault(key, {"shape": shape, "layers": [], "seconds": 0.0})
        m["layers"].append(layer)
        m["seconds"] += sec
    total = sum(m["seconds"] for m in merged.values())
    kept = sorted(merged.values(), key=lambda m: -m["seconds"])[:MAX_TIMED]
    return [(m, m["seconds"] / total) for m in kept]


def workloads_of(entries_by_batch):
    out = []
    for batch, entries in entries_by_batch.items():
        for m, share in pick(entries):
            layers = m["layers"]
            names = ", ".join(layers[:4]) + (f" and {len(layers) - 4} more" if len(layers) > 4 else "")
            out.append({"shape": m["shape"], "calls": len(layers),
                        "label": f"{ARCH} 640x640 batch {batch}: {names} ({100 * share:.0f}% of the op's estimated time)"})
    return out


def write(op, workloads, check):
    task = {"id": op, "op": op, "level": "L1", "category": CATEGORY, "architectures": [ARCH],
            "description": "Generated by tasks/vision/make_tasks.py from YOLOv10n's layer table at 640x640, fp16, "
                           "batch 1 and 32 (no captures of the model yet; shares are roofline estimates).",
            "workloads": workloads, "check_workloads": check}
    with open(os.path.join(HERE, op + ".json"), "w") as f:
        json.dump(task, f, indent=1)
        f.write("\n")
    print(f"{op}: {len(workloads)} workloads")


def main():
    layers = conv_layers()
    write("conv2d", workloads_of({b: [(conv_shape(l, b), l["layer"], conv_seconds(l, b)) for l in layers]
                                  for b in BATCHES}),
          [{"batch": 2, "height": 9, "width": 7, "in_channels": 12, "out_channels": 20, "kernel": 3, "stride": 2},
           {"batch": 1, "height": 8, "width": 8, "in_channels": 24, "out_channels": 24, "kernel": 7, "groups": 24,
            "dtype": "bf16"},
           {"batch": 1, "height": 5, "width": 6, "in_channels": 40, "out_channels": 9, "kernel": 1,
            "activation": "none", "bias": False}])
    others = other_calls()
    checks = {"max_pool2d": [{"batch": 2, "height": 7, "width": 6, "channels": 10, "kernel": 5, "stride": 1,
                              "padding": 2}],
              "upsample_nearest2d": [{"batch": 2, "height": 3, "width": 5, "channels": 12, "scale": 2}],
              "concat_channels": [{"batch": 2, "height": 3, "width": 4, "channels": [5, 8, 3]}]}
    for op in ("max_pool2d", "upsample_nearest2d", "concat_channels"):
        by_batch = {b: [(dict({"batch": b}, **s, dtype="f16"), layer, copy_seconds(o, s, b))
                        for o, s, layer in others if o == op] for b in BATCHES}
        write(op, workloads_of(by_batch), checks[op])


if __name__ == "__main__":
    main()
