"""The training split tl reads, as float32 tensors normalised exactly as tl's loader does.

Fashion-MNIST / MNIST: IDX files (plain or .gz) as dataload/idx.cpp reads them. CIFAR-10:
the binary batches data_batch_1..5.bin in that order (dataload/cifar10.cpp). Normalisation:
(pixel / 255 - mean) / std in three float32 operations (dataload/transforms.cpp). tensors:
train_x.npy (float32 [N, C, H, H]) and train_y.npy as they are, labels as int64, no
normalisation (dataload/tensors_dataset.cpp). tokens (dataload/tokens_dataset.cpp): one flat
array of token ids, train.npy, or raw little-endian train.bin with --token-dtype uint16|uint32;
sample i is the window tokens[i*L:(i+1)*L] and its targets the next tokens tokens[i*L+1:(i+1)*L+1]
(int64 both), floor((n - 1) / L) samples.
"""
import gzip
import os
import struct

import numpy as np

NORMALIZATION = {
    "cifar10": ([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
    "mnist": ([0.1307], [0.3081]),
    "fashion-mnist": ([0.2860], [0.3530]),
}


def _idx_path(data_dir, name):
    plain = os.path.join(data_dir, name)
    if os.path.isfile(plain):
        return plain
    if os.path.isfile(plain + ".gz"):
        return plain + ".gz"
    raise SystemExit("ddp_reference: error: '%s' is missing (neither it nor %s.gz exists)" % (plain, name))


def _read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def _idx(path, dims):
    raw = _read(path)
    magic, = struct.unpack(">I", raw[:4])
    if magic != 0x800 + dims:
        raise SystemExit("ddp_reference: error: '%s' is not an IDX file of %d dimensions" % (path, dims))
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise SystemExit("ddp_reference: error: '%s' is truncated" % path)
    return body.reshape(shape)


def _cifar_files(data_dir):
    return [os.path.join(data_dir, "data_batch_%d.bin" % i) for i in range(1, 6)]


def _token_path(data_dir, token_dtype):
    if token_dtype:
        return os.path.join(data_dir, "train.bin")
    return os.path.join(data_dir, "train.npy")


def check(kind, data_dir, token_dtype=None, seq_len=0):
    if kind == "tokens":
        path = _token_path(data_dir, token_dtype)
        if not os.path.isfile(path):
            raise SystemExit("ddp_reference: error: token file '%s' is missing" % path)
        load_tokens(data_dir, seq_len, token_dtype)  # its dtype, ids and length
    elif kind == "tensors":
        for name in ("train_x.npy", "train_y.npy"):
            if not os.path.isfile(os.path.join(data_dir, name)):
                raise SystemExit("ddp_reference: error: NumPy file '%s' is missing" % os.path.join(data_dir, name))
    elif kind == "cifar10":
        for f in _cifar_files(data_dir):
            if not os.path.isfile(f):
                raise SystemExit("ddp_reference: error: CIFAR-10 file '%s' is missing" % f)
    else:
        _idx_path(data_dir, "train-images-idx3-ubyte")
        _idx_path(data_dir, "train-labels-idx1-ubyte")


def raw_training_split(kind, data_dir):
    """uint8 images (N, C, H, W) and int64 labels."""
    if kind == "cifar10":
        records = np.concatenate([np.frombuffer(_read(f), dtype=np.uint8).reshape(-1, 3073)
                                  for f in _cifar_files(data_dir)])
        return records[:, 1:].reshape(-1, 3, 32, 32), records[:, 0].astype(np.int64)
    images = _idx(_idx_path(data_dir, "train-images-idx3-ubyte"), 3)
    labels = _idx(_idx_path(data_dir, "train-labels-idx1-ubyte"), 1)
    return images.reshape(-1, 1, images.shape[1], images.shape[2]), labels.astype(np.int64)


class TokenWindows:
    """tl's tokens dataset: sample i is (tokens[i*L:(i+1)*L], tokens[i*L+1:(i+1)*L+1])."""

    def __init__(self, tokens, seq_len):
        self.tokens = tokens  # int64 [n]
        self.seq_len = seq_len
        self.samples = (tokens.numel() - 1) // seq_len if tokens.numel() > 0 else 0

    def __len__(self):
        return self.samples

    def __getitem__(self, i):
        first = i * self.seq_len
        return self.tokens[first:first + self.seq_len], self.tokens[first + 1:first + self.seq_len + 1]


def load_tokens(data_dir, seq_len, token_dtype=None):
    """A torch Dataset of tl's token windows (the whole training file as int64 in memory)."""
    import torch
    path = _token_path(data_dir, token_dtype)
    if token_dtype:
        if token_dtype not in ("uint16", "uint32"):
            raise SystemExit("ddp_reference: error: --token-dtype: '%s' is not uint16 or uint32" % token_dtype)
        ids = np.fromfile(path, dtype="<u2" if token_dtype == "uint16" else "<u4")
    else:
        ids = np.load(path)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise SystemExit("ddp_reference: error: '%s' must hold one flat integer array of token ids, not %s %s"
                             % (path, ids.dtype, ids.shape))
    ids = ids.astype(np.int64)
    if ids.size and ids.min() < 0:
        raise SystemExit("ddp_reference: error: '%s' holds a negative token id" % path)
    data = TokenWindows(torch.from_numpy(ids), seq_len)
    if len(data) == 0:
        raise SystemExit("ddp_reference: error: --seq-len %d is longer than the data: '%s' holds %d tokens"
                         % (seq_len, path, ids.size))
    return data


def load(kind, data_dir):
    import torch
    if kind == "tensors":
        x = np.load(os.path.join(data_dir, "train_x.npy"))
        y = np.load(os.path.join(data_dir, "train_y.npy")).astype(np.int64)
        if x.dtype != np.float32 or x.ndim != 4 or x.shape[2] != x.shape[3]:
            raise SystemExit("ddp_reference: error: train_x.npy must hold float32 [N, C, H, H], not %s %s"
                             % (x.dtype, x.shape))
        return torch.from_numpy(x), torch.from_numpy(y), (x.shape[1], x.shape[2])
    pixels, labels = raw_training_split(kind, data_dir)
    mean, std = NORMALIZATION[kind]
    out = np.empty(pixels.shape, dtype=np.float32)
    for c in range(pixels.shape[1]):
        # A table of the 256 values, each computed as tl's normalizedValue does.
        table = ((np.arange(256, dtype=np.float32) / np.float32(255)) - np.float32(mean[c])) / np.float32(std[c])
        out[:, c] = table[pixels[:, c]]
    return torch.from_numpy(out), torch.from_numpy(labels), (pixels.shape[1], pixels.shape[2])


def write_idx_subset(src_dir, dst_dir, train, test):
    """The first `train` training and `test` test samples of an IDX data set, as plain IDX files."""
    os.makedirs(dst_dir, exist_ok=True)
    for prefix, count in (("train", train), ("t10k", test)):
        images = _idx(_idx_path(src_dir, prefix + "-images-idx3-ubyte"), 3)[:count]
        labels = _idx(_idx_path(src_dir, prefix + "-labels-idx1-ubyte"), 1)[:count]
        with open(os.path.join(dst_dir, prefix + "-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, *images.shape) + images.tobytes())
        with open(os.path.join(dst_dir, prefix + "-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, *labels.shape) + labels.tobytes())


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 6 or sys.argv[1] != "subset":
        raise SystemExit("usage: ddp_data.py subset SRC_DIR DST_DIR TRAIN TEST")
    write_idx_subset(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
