#!/usr/bin/env python3
"""Export a second, wider kit of current architectures, small configurations.

test/models/kit (scripts/export_kit.py) holds the exports the project is
developed against. This script exports architectures beyond it, to check
import, training-step construction, planning and CPU execution on exports
the project was not developed on. Its first run (2026-12-05) found the
defects fixed that day: TorchScript Where/Slice/Transpose shape folding,
constants folded by the dynamo exporter trained as parameters, Trilu, Cos,
Sin and Abs lowering, and the MatMul weight-gradient blow-up.

    python3 scripts/export_fresh_models.py OUT_DIR                  # all models
    python3 scripts/export_fresh_models.py OUT_DIR --names llama,vit,swin
    python3 scripts/export_fresh_models.py OUT_DIR --keep-weights   # to compare with onnxruntime

Use the `python3` that has PyPI torch 2.x, torchvision, onnx, onnxscript and
onnxruntime (the last one because the weight stripping is imported from
export_kit.py). transformers is optional: without it, t5 is skipped with a
message. Only the CPU is used; the whole run takes a few minutes.

Models (random weights, torch.manual_seed(0) before each; static shapes):
  llama               Llama-style decoder: RMSNorm, SwiGLU, rotary, GQA, causal mask via triu
  sdpa_gpt            GPT decoder: F.scaled_dot_product_attention with is_causal and with a float
                      attn_mask (input `attn_bias`), tied LM head, GELU (tanh)
  vit, convnext, swin torchvision code, small configurations
  regnet_y_400mf, shufflenet_v2_x0_5, mnasnet0_5, mobilenet_v3_small,
  squeezenet1_1, googlenet, resnext50_32x4d, efficientnet_v2_s
                      torchvision, at 2x3x128x128
  deeplabv3           torchvision DeepLabV3 (MobileNetV3-large backbone), its "out" map
  r3d_18              torchvision video ResNet (3-d convolutions), a 1x3x8x64x64 clip
  maxvit_t            torchvision MaxViT-T at 1x3x224x224 (block and grid attention)
  audio_encoder       Whisper-style: Conv1d + GELU, learned positions, pre-norm encoder
  t5                  HF transformers T5, tiny config, eager attention
  torch_transformer   nn.Transformer encoder-decoder (norm_first, GELU, causal tgt mask)
  unet, unet_bn       U-Net with GroupNorm+SiLU in its two deepest levels / BatchNorm throughout
  upsample            convolutions and nearest/bilinear upsampling only
  lstm, gru           2-layer bidirectional LSTM classifier / GRU classifier
  cnn_train, bn_train small CNN in TRAINING mode (BatchNorm batch statistics) with / without Dropout
Every model is in eval mode except cnn_train and bn_train. Inputs are named as
the builders' dicts say; the single output is named `logits`.

Outputs, per model, in OUT_DIR:
  <name>.dynamo.onnx  torch.onnx.export(..., dynamo=True) at its default opset
  <name>.dynamo23.onnx the same at opset 23, where nn.GroupNorm becomes
                      GroupNormalization, nn.RMSNorm RMSNormalization and
                      scaled_dot_product_attention Attention (their
                      expansions at import were found this way)
  <name>.ts17.onnx    torch.onnx.export(..., dynamo=False, opset_version=17)
  <name>.ts20.onnx    same at opset 20
(TorchScript training-mode exports use training=TrainingMode.TRAINING and
do_constant_folding=False, as export_kit.py does.) An exporter that fails for
a model is reported in one line and skipped; the run goes on.

Weights are stripped as export_kit.py does: every initializer of >= 1024 bytes
becomes external data pointing at "<file stem>.weights.bin", which is never
written. Load such files with onnx.load(path, load_external_data=False).
--keep-weights writes the real weights inline instead.
"""

import argparse
import io
import math
import os
import sys
import time

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from export_kit import quiet, strip_weights

SEED = 0
TS_OPSETS = (17, 20)
DYNAMO_NEWEST_OPSET = 23
TRAIN_MODE = {"cnn_train", "bn_train"}


# --------------------------------------------------------------------------
# Decoder-only language models (Llama, GPT) sharing attention and block code
# --------------------------------------------------------------------------


class Attention(nn.Module):
    """Self-attention projections over [B, T, d]; k and v have n_kv heads
    (grouped-query attention when n_kv < n_heads). Subclasses implement
    attend(q, k, v, *ctx) on [B, heads, T, head_dim] tensors."""

    def __init__(self, d, n_heads, n_kv, bias):
        super().__init__()
        self.nh, self.nkv, self.hd = n_heads, n_kv, d // n_heads
        self.q = nn.Linear(d, n_heads * self.hd, bias=bias)
        self.k = nn.Linear(d, n_kv * self.hd, bias=bias)
        self.v = nn.Linear(d, n_kv * self.hd, bias=bias)
        self.o = nn.Linear(n_heads * self.hd, d, bias=bias)

    def forward(self, x, *ctx):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        y = self.attend(q, k, v, *ctx)
        return self.o(y.transpose(1, 2).reshape(B, T, C))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat([-x2, x1], -1)


class LlamaAttention(Attention):
    """Rotary embedding, GQA by expanding k/v, explicit softmax(q k^T / sqrt(hd) + mask) v."""

    def attend(self, q, k, v, cos, sin, mask):
        B, _, T, hd = q.shape
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.nh // self.nkv
        k = k[:, :, None].expand(B, self.nkv, rep, T, hd).reshape(B, self.nh, T, hd)
        v = v[:, :, None].expand(B, self.nkv, rep, T, hd).reshape(B, self.nh, T, hd)
        a = (q @ k.transpose(-2, -1)) / math.sqrt(hd) + mask
        return F.softmax(a.float(), -1).to(q.dtype) @ v


class SdpaAttention(Attention):
    """Causal SDPA plus a second SDPA with a float mask, summed."""

    def attend(self, q, k, v, attn_bias):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True) + F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_bias
        )


class PreNormBlock(nn.Module):
    """x + attn(norm(x)), then + mlp(norm(x)); `norm` is a class taking d."""

    def __init__(self, d, norm, attn, mlp):
        super().__init__()
        self.n1, self.attn, self.n2, self.mlp = norm(d), attn, norm(d), mlp

    def forward(self, x, *ctx):
        x = x + self.attn(self.n1(x), *ctx)
        return x + self.mlp(self.n2(x))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Llama(nn.Module):
    def __init__(self, vocab=2000, d=256, layers=2, n_heads=8, n_kv=2, hidden=688):
        super().__init__()
        self.hd = d // n_heads
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            PreNormBlock(d, RMSNorm, LlamaAttention(d, n_heads, n_kv, bias=False), SwiGLU(d, hidden))
            for _ in range(layers)
        )
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        T = input_ids.shape[1]
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        f = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.emb(input_ids)
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        return self.head(self.norm(x))


class GPT(nn.Module):
    def __init__(self, vocab=3000, ctx=64, d=192, layers=2, n_heads=6):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(
            PreNormBlock(d, nn.LayerNorm, SdpaAttention(d, n_heads, n_heads, bias=True),
                         nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)))
            for _ in range(layers)
        )
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, input_ids, attn_bias):
        x = self.wte(input_ids) + self.wpe(torch.arange(input_ids.shape[1]))
        for b in self.blocks:
            x = b(x, attn_bias)
        return self.head(self.lnf(x))


def llama():
    return Llama(), {"input_ids": torch.randint(0, 2000, (2, 64))}


def sdpa_gpt():
    return GPT(), {"input_ids": torch.randint(0, 3000, (2, 64)), "attn_bias": torch.zeros(2, 1, 64, 64)}


# --------------------------------------------------------------------------
# Encoder-decoder transformers
# --------------------------------------------------------------------------


class T5Logits(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, decoder_input_ids):
        out = self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False, return_dict=False)
        return out[0]


def t5():
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(
        vocab_size=2000, d_model=128, d_kv=32, d_ff=512, num_layers=2, num_decoder_layers=2, num_heads=4,
        relative_attention_num_buckets=32, feed_forward_proj="gated-gelu", dropout_rate=0.0, use_cache=False,
        tie_word_embeddings=False, decoder_start_token_id=0, pad_token_id=0,
    )
    cfg._attn_implementation = "eager"
    inputs = {"input_ids": torch.randint(1, 2000, (2, 32)), "decoder_input_ids": torch.randint(1, 2000, (2, 16))}
    return T5Logits(T5ForConditionalGeneration(cfg)), inputs


class Seq2Seq(nn.Module):
    def __init__(self, vocab=1000, d=128):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(vocab, d), nn.Embedding(vocab, d)
        self.transformer = nn.Transformer(
            d_model=d, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=256, dropout=0.1,
            activation="gelu", batch_first=True, norm_first=True,
        )
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.out(self.transformer(self.src_emb(src), self.tgt_emb(tgt), tgt_mask=mask, tgt_is_causal=True))


def torch_transformer():
    return Seq2Seq(), {"src": torch.randint(0, 1000, (2, 24)), "tgt": torch.randint(0, 1000, (2, 16))}


# --------------------------------------------------------------------------
# Vision
# --------------------------------------------------------------------------


def images(n, size):
    return {"x": torch.randn(n, 3, size, size)}


def vit():
    from torchvision.models.vision_transformer import VisionTransformer

    m = VisionTransformer(image_size=64, patch_size=16, num_layers=3, num_heads=4, hidden_dim=192, mlp_dim=768,
                          num_classes=100)
    nn.init.normal_(m.heads.head.weight, std=0.05)  # torchvision zero-inits it
    return m, images(2, 64)


def convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    cfg = [CNBlockConfig(32, 64, 2), CNBlockConfig(64, 128, 2), CNBlockConfig(128, 256, 4), CNBlockConfig(256, None, 2)]
    return ConvNeXt(cfg, stochastic_depth_prob=0.1, num_classes=100), images(2, 96)


def swin():
    from torchvision.models.swin_transformer import SwinTransformer

    m = SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2, 2], num_heads=[3, 6, 12, 24],
                        window_size=[7, 7], stochastic_depth_prob=0.1, num_classes=100)
    return m, images(1, 112)


def torchvision_cnn(arch):
    return lambda: (getattr(torchvision.models, arch)(), images(2, 128))


class SegmentationOut(nn.Module):
    """A torchvision segmentation model's "out" map alone (it returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class AudioEncoder(nn.Module):
    """Whisper-style encoder: two Conv1d + GELU over mel frames (the second
    strided), sinusoid-free learned positions, pre-norm Transformer layers."""

    def __init__(self, mels=32, d=64, frames=100, layers=2):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.positions = nn.Parameter(torch.randn(frames // 2, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 10)

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).transpose(1, 2) + self.positions
        return self.head(self.encoder(x).mean(dim=1))


def double_conv(cin, cout, group_norm=False):
    norm = (lambda c: nn.GroupNorm(8, c)) if group_norm else nn.BatchNorm2d
    act = nn.SiLU if group_norm else nn.ReLU
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), norm(cout), act(),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), norm(cout), act(),
    )


class UNet(nn.Module):
    """Three poolings; up by ConvTranspose twice, then bilinear interpolation; skip concats."""

    def __init__(self, group_norm, c=16):
        super().__init__()
        self.d1, self.d2 = double_conv(3, c), double_conv(c, 2 * c)
        self.d3, self.bottom = double_conv(2 * c, 4 * c, group_norm), double_conv(4 * c, 8 * c, group_norm)
        self.up3, self.c3 = nn.ConvTranspose2d(8 * c, 4 * c, 2, stride=2), double_conv(8 * c, 4 * c)
        self.up2, self.c2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2), double_conv(4 * c, 2 * c)
        self.c1, self.out = double_conv(3 * c, c), nn.Conv2d(c, 2, 1)

    def forward(self, x):
        x1 = self.d1(x)
        x2 = self.d2(F.max_pool2d(x1, 2))
        x3 = self.d3(F.max_pool2d(x2, 2))
        y = self.bottom(F.max_pool2d(x3, 2))
        y = self.c3(torch.cat([self.up3(y), x3], 1))
        y = self.c2(torch.cat([self.up2(y), x2], 1))
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.c1(torch.cat([y, x1], 1)))


class Upsampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2, self.c3 = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 2, 1)

    def forward(self, x):
        y = F.interpolate(F.relu(self.c1(x)), scale_factor=2, mode="nearest")
        y = F.interpolate(F.relu(self.c2(y)), scale_factor=2, mode="bilinear", align_corners=False)
        return self.c3(y)


def train_cnn(dropout):
    drop = (lambda p: [nn.Dropout(p)]) if dropout else (lambda p: [])
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), *drop(0.1), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, 64), nn.BatchNorm1d(64), nn.GELU(), *drop(0.2), nn.Linear(64, 10),
    ), images(4, 32)


# --------------------------------------------------------------------------
# Recurrent
# --------------------------------------------------------------------------


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(500, 64)
        self.lstm = nn.LSTM(64, 96, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(192, 10)

    def forward(self, ids):
        return self.fc(self.lstm(self.emb(ids))[0][:, -1])


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru, self.fc = nn.GRU(32, 64, batch_first=True), nn.Linear(64, 5)

    def forward(self, x):
        return self.fc(self.gru(x)[1][-1])


MODELS = {
    "llama": llama,
    "sdpa_gpt": sdpa_gpt,
    "vit": vit,
    "convnext": convnext,
    "swin": swin,
    "regnet_y_400mf": torchvision_cnn("regnet_y_400mf"),
    "shufflenet_v2_x0_5": torchvision_cnn("shufflenet_v2_x0_5"),
    "mnasnet0_5": torchvision_cnn("mnasnet0_5"),
    "mobilenet_v3_small": torchvision_cnn("mobilenet_v3_small"),
    "squeezenet1_1": torchvision_cnn("squeezenet1_1"),
    "googlenet": torchvision_cnn("googlenet"),
    "resnext50_32x4d": torchvision_cnn("resnext50_32x4d"),
    "efficientnet_v2_s": torchvision_cnn("efficientnet_v2_s"),
    "deeplabv3": lambda: (SegmentationOut(torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None)), images(2, 128)),
    "r3d_18": lambda: (torchvision.models.video.r3d_18(), {"clip": torch.randn(1, 3, 8, 64, 64)}),
    "maxvit_t": lambda: (torchvision.models.maxvit_t(), images(1, 224)),
    "audio_encoder": lambda: (AudioEncoder(), {"mel": torch.randn(2, 32, 100)}),
    "t5": t5,
    "torch_transformer": torch_transformer,
    "unet": lambda: (UNet(group_norm=True), images(2, 64)),
    "unet_bn": lambda: (UNet(group_norm=False), images(2, 64)),
    "upsample": lambda: (Upsampler(), images(2, 32)),
    "lstm": lambda: (LSTMClassifier(), {"ids": torch.randint(0, 500, (2, 20))}),
    "gru": lambda: (GRUClassifier(), {"x": torch.randn(2, 20, 32)}),
    "cnn_train": lambda: train_cnn(dropout=True),
    "bn_train": lambda: train_cnn(dropout=False),
}


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


def export(model, inputs, exporter):
    """One export as a ModelProto; exporter is "dynamo", "dynamo<opset>" or "ts<opset>"."""
    args, names = tuple(inputs.values()), list(inputs)
    if exporter.startswith("dynamo"):
        opset = {"opset_version": int(exporter[6:])} if exporter != "dynamo" else {}
        return torch.onnx.export(model, args, dynamo=True, input_names=names, output_names=["logits"],
                                 **opset).model_proto
    buf = io.BytesIO()
    torch.onnx.export(
        model, args, buf, dynamo=False, opset_version=int(exporter[2:]), input_names=names, output_names=["logits"],
        training=torch.onnx.TrainingMode.TRAINING if model.training else torch.onnx.TrainingMode.EVAL,
        do_constant_folding=not model.training,
    )
    return onnx.load_from_string(buf.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--names", help="comma list of models (default: all): " + ",".join(MODELS))
    ap.add_argument("--keep-weights", action="store_true", help="keep the real weights inline")
    opts = ap.parse_args()
    names = opts.names.split(",") if opts.names else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown models: {', '.join(unknown)}")
    os.makedirs(opts.out_dir, exist_ok=True)

    failures = 0
    for name in names:
        torch.manual_seed(SEED)
        try:
            model, inputs = MODELS[name]()
        except ImportError as e:
            print(f"{name}: skipped ({e})", flush=True)
            continue
        model.train(name in TRAIN_MODE)
        for exporter in ["dynamo", f"dynamo{DYNAMO_NEWEST_OPSET}"] + [f"ts{o}" for o in TS_OPSETS]:
            fname = f"{name}.{exporter}.onnx"
            t0 = time.time()
            torch.manual_seed(SEED)  # dynamo runs the model; dropout draws from here
            try:
                with quiet():
                    proto = export(model, inputs, exporter)
            except Exception as e:  # noqa: BLE001 - report and go on
                msg = (str(e).strip().splitlines() or [""])[0]
                print(f"{fname}: FAILED: {type(e).__name__}: {msg[:200]}", flush=True)
                failures += 1
                continue
            if not opts.keep_weights:
                strip_weights(proto, fname[: -len(".onnx")] + ".weights.bin")
            path = os.path.join(opts.out_dir, fname)
            onnx.save_model(proto, path)
            opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
            print(f"{fname}: {os.path.getsize(path):,} B, opset {opset}, {len(proto.graph.node)} nodes, "
                  f"{time.time() - t0:.1f}s", flush=True)
    print(f"{failures} export(s) failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
