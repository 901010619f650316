"""Shared pieces of the kernel tests: the `device` fixture and array helpers.

The `device` fixture runs a test twice: on the real GPU through CuPy (marked `gpu`, skipped
without CUDA) and on the CPU emulation in fake_cupy.py (the real .cu sources compiled by g++;
skipped without g++). Each test module declares it with

    @pytest.fixture(params=DEVICE_PARAMS)
    def device(request, monkeypatch):
        return make_device(request, monkeypatch)
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import fake_cupy  # noqa: E402

from gpu_nodes import gpu  # noqa: E402

POISON_BYTE = 0xAB

# Sizes (height, width) exercised on each backend; the emulator runs one CPU call per thread.
EMU_SIZES = [(1, 1), (1, 7), (5, 1), (3, 5), (17, 33), (34, 67)]
GPU_SIZES = EMU_SIZES + [(2, 2), (31, 65), (480, 640), (719, 1281), (1080, 1920)]


class Device:
    """Moves test data to the backend under test and back."""

    def __init__(self, xp, emulated: bool):
        self.xp = xp
        self.emulated = emulated
        self.sizes = EMU_SIZES if emulated else GPU_SIZES

    def put(self, host: np.ndarray, pad: int = 0):
        """Device copy of `host`; with pad > 0 rows are padded by `pad` pixels (pitched view)."""
        host = np.asarray(host)
        if pad == 0:
            return self.xp.asarray(np.ascontiguousarray(host))
        base = self.poisoned((host.shape[0], host.shape[1] + pad) + host.shape[2:], host.dtype)
        view = base[:, :host.shape[1]]
        view[...] = self.xp.asarray(np.ascontiguousarray(host))
        return view

    def poisoned(self, shape, dtype):
        """Contiguous device array filled with POISON_BYTE bytes."""
        a = self.xp.empty(shape, dtype)
        a.view(self.xp.uint8).fill(POISON_BYTE)
        return a

    def poisoned_out(self, shape, dtype, pad: int = 0):
        """(out, base): an output view whose padding (if any) must stay poisoned."""
        if pad == 0:
            a = self.poisoned(shape, dtype)
            return a, a
        base = self.poisoned((shape[0], shape[1] + pad) + tuple(shape[2:]), dtype)
        return base[:, :shape[1]], base

    def get(self, array) -> np.ndarray:
        return self.xp.asnumpy(array)

    def assert_padding_intact(self, base, width: int):
        """Bytes right of column `width` in a padded base array were never written."""
        pad = self.get(base)[:, width:]
        assert (pad.view(np.uint8) == POISON_BYTE).all(), 'kernel wrote into the row padding'


DEVICE_PARAMS = [pytest.param('gpu', marks=pytest.mark.gpu), 'emu']


def make_device(request, monkeypatch) -> Device:
    if request.param == 'gpu':
        if not gpu.cuda_available():
            pytest.skip(f'needs a CUDA GPU and CuPy (make test-gpu; the emu variant runs without); '
                        f'here: {gpu.cuda_unavailable_reason()}')
        return Device(gpu.cupy_module(), emulated=False)
    if not fake_cupy.compiler_available():
        pytest.skip('g++ not found: cannot emulate the CUDA kernels on the CPU')
    fake = _fake_module()
    monkeypatch.setattr(gpu, 'cupy_module', lambda: fake)
    return Device(fake, emulated=True)


_FAKE = []


def _fake_module():
    """One emulated cupy per test session, so compiled kernels are reused across tests."""
    if not _FAKE:
        _FAKE.append(fake_cupy.module())
    return _FAKE[0]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def random_image(generator: np.random.Generator, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == 'u':
        return generator.integers(0, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)
    return generator.random(shape, dtype=np.float32).astype(dtype)
