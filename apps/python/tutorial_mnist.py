"""The TF1 tutorial's MNIST model and data for PyTorch, written once: the asyncps example
(mnist_torch.py) and PyTorch's own baseline (bench/torch_mnist.py) must train the same thing.

Model (as lib/nn/mnist_cnn.h): x 28x28x1 in [0,1] -> conv 3x3 1->8 SAME + b -> maxpool 2x2/2 ->
conv 3x3 8->16 SAME + b -> maxpool 2x2/2 -> flatten in (h,w,c) order (784) -> fc 784->10 + b.
No activations (the tutorial has none). Glorot-uniform init of weights AND biases: limit =
sqrt(6/(fan_in+fan_out)); conv fans k*k*in / k*k*out; fc 784/10; a bias of length n has fan_in =
fan_out = n. Schedule: lr = 0.01 * 0.99^(global_step / (60000 / batch)) (not staircase).
Data: validation = the first 5,000 training images, train = the other 55,000, test = t10k.
"""
import math
import os

import numpy as np
import torch


def read_idx(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    ndim = magic & 0xFF
    if magic >> 8 != 0x08:  # unsigned byte
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic:#x})")
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {arr.size} bytes of data, header says {dims}")
    return arr.reshape(dims)


def load_mnist(d):
    """(train, validation, test), each (images float32 (N, 28, 28) in [0, 1], labels int64 (N,))."""
    tx = read_idx(os.path.join(d, "train-images-idx3-ubyte")).astype(np.float32) / 255.0
    ty = read_idx(os.path.join(d, "train-labels-idx1-ubyte")).astype(np.int64)
    ex = read_idx(os.path.join(d, "t10k-images-idx3-ubyte")).astype(np.float32) / 255.0
    ey = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte")).astype(np.int64)
    return (tx[5000:], ty[5000:]), (tx[:5000], ty[:5000]), (ex, ey)


class TutorialCnn(torch.nn.Module):
    def __init__(self, channels_last=False):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(784, 10)
        self.channels_last = channels_last

    def forward(self, x):  # x: (B, 1, 28, 28)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        h = torch.nn.functional.max_pool2d(self.conv1(x), 2, 2)  # (B, 8, 14, 14)
        h = torch.nn.functional.max_pool2d(self.conv2(h), 2, 2)  # (B, 16, 7, 7)
        return self.fc(h.permute(0, 2, 3, 1).reshape(x.shape[0], 784))  # (h, w, c) order, as TF's


# (fan_in, fan_out) of every parameter, in named_parameters() order (the order of the draws)
GLOROT_FANS = {"conv1.weight": (9 * 1, 9 * 8), "conv1.bias": (8, 8), "conv2.weight": (9 * 8, 9 * 16),
               "conv2.bias": (16, 16), "fc.weight": (784, 10), "fc.bias": (10, 10)}


def build_model(seed, channels_last=False):
    """The tutorial's CNN with Glorot-uniform weights and biases drawn from `seed`."""
    net = TutorialCnn(channels_last)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in net.named_parameters():
            limit = math.sqrt(6.0 / sum(GLOROT_FANS[name]))
            p.copy_(torch.rand(p.shape, generator=g) * 2 * limit - limit)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
    return net


def lr_at(step, batch, base=0.01, decay=0.99):
    return base * decay ** (step / (60000.0 / batch))


def accuracy(net, x, y):
    """Fraction of (x, y) classified right; x: numpy or tensor images (N, 28, 28) or (N, 1, 28, 28)
    (each chunk of them goes to the device of net's parameters)."""
    dev = next(net.parameters()).device
    with torch.no_grad():
        correct = 0
        for i in range(0, len(x), 1000):
            xb = torch.as_tensor(x[i:i + 1000]).view(-1, 1, 28, 28).to(dev)
            correct += int((net(xb).argmax(1) == torch.as_tensor(y[i:i + 1000]).to(dev)).sum())
    return correct / len(x)
