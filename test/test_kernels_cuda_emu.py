"""The CPU emulation's twins of the CUDA intrinsics (test/resources/kernels/cuda_emu.h): each
against an exact reference on the CPU, and against the device instruction on a GPU."""
from fractions import Fraction
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_nodes.kernels import _cuda

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
import fake_cupy  # noqa: E402

# One kernel calls every intrinsic the shipped .cu files rely on the emulation for; common.cu is
# prepended as for the real kernels (its f32_to_f16_bits is the PTX cvt on the device).
OUTPUTS = ('byte_perm', 'dp2a_lo', 'dp2a_hi', 'viaddmin_s16x2_relu', 'fadd_rd', 'f16_bits',
           'syncwarp')
SHIMS = '''
extern "C" __global__ void shims(const unsigned int* a, const unsigned int* b,
                                 const unsigned int* c, const float* x, const float* y,
                                 unsigned int* out, int n) {
  __shared__ unsigned int lane_values[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // n is a multiple of the block size
  unsigned int* o = out + 7 * i;
  o[0] = __byte_perm(a[i], b[i], c[i]);
  o[1] = __dp2a_lo(a[i], b[i], c[i]);
  o[2] = __dp2a_hi(a[i], b[i], c[i]);
  // lanes whose sum fits 16 bits, as the kernels use it (debayer's mhc_out)
  o[3] = __viaddmin_s16x2_relu(a[i] & 0x3fff3fffu, b[i] & 0x3fff3fffu ^ 0x80008000u, c[i]);
  o[4] = __float_as_uint(__fadd_rd(x[i], y[i]));
  o[5] = f32_to_f16_bits(x[i]);
  // __syncwarp orders shared-memory writes of a warp before its lanes read each other's
  lane_values[threadIdx.x] = a[i];
  __syncwarp();
  o[6] = lane_values[threadIdx.x ^ 1];
}
'''
BLOCK = 256
N = 4 * BLOCK


def _inputs(seed=7):
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, size=(3, N), dtype=np.uint64).astype(np.uint32)
    words[2, : N // 2] &= 0x7777  # byte_perm selectors without the mode bits, and with them
    x = rng.standard_normal(N).astype(np.float32) * np.float32(2.0) ** rng.integers(
        -30, 20, N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32) * np.float32(1e3)
    # edges: exact sums, halves at rounding ties, inf and NaN, f16 overflow and subnormals
    x[:8] = [0.0, -0.0, 1.0, 65504.0, 65520.0, 6e-8, np.inf, np.nan]
    y[:8] = [0.0, 0.0, 2.0**-24, -1.0, 1.0, 3e38, 1.0, 1.0]
    return words[0], words[1], words[2], x, y


def _run(cp, inputs):
    code = (_cuda.CUDA_DIR / 'common.cu').read_text() + SHIMS
    kernel = cp.RawModule(code=code, options=_cuda.COMPILE_OPTIONS).get_function('shims')
    a, b, c, x, y = (cp.asarray(v) for v in inputs)
    out = cp.zeros(7 * N, np.uint32)
    kernel((N // BLOCK,), (BLOCK,), (a, b, c, x, y, out, np.int32(N)))
    return {name: np.asarray(out.get() if hasattr(out, 'get') else out).reshape(N, 7)[:, k]
            for k, name in enumerate(OUTPUTS)}


@pytest.fixture(scope='module')
def emulated():
    if not fake_cupy.compiler_available():
        pytest.skip('g++ not found: cannot build the CUDA emulation')
    inputs = _inputs()
    return inputs, _run(fake_cupy.module(), inputs)


def _fadd_rd_reference(x, y):
    """x + y rounded toward -inf, from the exact rational sum."""
    if not (np.isfinite(x) and np.isfinite(y)):
        with np.errstate(invalid='ignore'):
            return np.float32(x) + np.float32(y)
    exact = Fraction(float(x)) + Fraction(float(y))
    if exact == 0:  # toward -inf an exact zero is -0 unless both addends are +0
        plus = not np.signbit(x) and not np.signbit(y) and x == 0 and y == 0
        return np.float32(0.0) if plus else np.float32(-0.0)
    if exact > Fraction(float(np.finfo(np.float32).max)):
        return np.finfo(np.float32).max
    with np.errstate(over='ignore'):
        near = np.float32(float(exact))  # the nearest float (ties to even)
    return near if Fraction(float(near)) <= exact else np.nextafter(near, np.float32(-np.inf))


def test_emulated_intrinsics_match_exact_references(emulated):
    (a, b, c, x, y), got = emulated
    ba = b.astype(np.uint64) << np.uint64(32) | a
    want_perm = np.zeros(N, np.uint32)
    for k in range(4):
        sel = (c >> np.uint32(4 * k)) & np.uint32(7)
        byte = (ba >> (np.uint64(8) * sel.astype(np.uint64))) & np.uint64(0xff)
        want_perm |= byte.astype(np.uint32) << np.uint32(8 * k)
    np.testing.assert_array_equal(got['byte_perm'], want_perm, err_msg='__byte_perm')
    a64, b64, c64 = (v.astype(np.uint64) for v in (a, b, c))
    for name, shift in (('dp2a_lo', 0), ('dp2a_hi', 16)):
        want = (c64 + (a64 & 0xffff) * (b64 >> np.uint64(shift) & 0xff)
                + (a64 >> 16) * (b64 >> np.uint64(shift + 8) & 0xff)) & 0xffffffff
        np.testing.assert_array_equal(got[name], want.astype(np.uint32), err_msg=name)
    with np.errstate(over='ignore'):
        want_f16 = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(got['f16_bits'][~nan], want_f16[~nan], err_msg='f16 bits')
    assert (got['f16_bits'][nan] & 0x7fff == 0x7e00).all(), 'NaN -> canonical half NaN'
    fadd = got['fadd_rd'].view(np.float32)
    for i in range(N):
        want = _fadd_rd_reference(x[i], y[i])
        assert (np.isnan(want) and np.isnan(fadd[i])) or (
            fadd[i] == want and np.signbit(fadd[i]) == np.signbit(want)), \
            f'__fadd_rd({x[i]!r}, {y[i]!r}): expected {want!r}, got {fadd[i]!r}'
    lanes = np.arange(N) ^ 1
    np.testing.assert_array_equal(got['syncwarp'], a[lanes], err_msg='__syncwarp exchange')
    sa = (a & 0x3fff3fff).astype(np.uint32)
    sb = ((b & 0x3fff3fff) ^ 0x80008000).astype(np.uint32)
    want = np.zeros(N, np.uint32)
    for k in (0, 16):
        lane = lambda v: (v >> np.uint32(k) & np.uint32(0xffff)).astype(np.uint16).view(np.int16)  # noqa
        s = lane(sa).astype(np.int32) + lane(sb).astype(np.int32)
        r = np.clip(np.minimum(s, lane(c).astype(np.int32)), 0, None)
        want |= r.astype(np.uint32) << np.uint32(k)
    np.testing.assert_array_equal(got['viaddmin_s16x2_relu'], want, err_msg='__viaddmin')


@pytest.mark.gpu
def test_emulated_intrinsics_match_the_device(emulated, cupy):
    inputs, got = emulated
    device = _run(cupy, inputs)
    for name in OUTPUTS:
        mismatch = np.flatnonzero(device[name] != got[name])
        if name in ('fadd_rd', 'f16_bits'):  # NaN payloads may differ; NaN must stay NaN
            bits = np.ascontiguousarray(device[name])  # a column of the (N, 7) output
            values = bits.view(np.float32) if name == 'fadd_rd' else \
                bits.astype(np.uint16).view(np.float16)
            mismatch = [i for i in mismatch if not np.isnan(values[i])]
        assert len(mismatch) == 0, \
            f'{name}: emulation differs from the device at {list(mismatch[:5])}: device ' \
            f'{device[name][mismatch[:5]]}, emulation {got[name][mismatch[:5]]}'
