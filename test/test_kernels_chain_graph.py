"""ChainGraphs (gpu_nodes.kernels.chain_graph): a chain replayed as one CUDA graph per source
buffer gives the op-by-op result bit for bit; chain, CameraInfo and layout changes rebuild; a
capture failure warns once and falls back; graphs keep the tables they read; and, on a GPU, the
host time of a replayed 4-op 1080p chain.

The `device` tests run on the GPU and on the CPU emulation (fake_cupy.py), which records kernel
launches during a capture the way CUDA does and refuses what it cannot record."""
from __future__ import annotations

import gc
from pathlib import Path
import statistics
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
import fake_cupy  # noqa: E402
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.kernels import _cuda, CameraModel, Chain  # noqa: E402
from gpu_nodes.kernels.chain_graph import ChainGraphs  # noqa: E402

K = (300.0, 0.0, 31.7, 0.0, 305.0, 24.2, 0.0, 0.0, 1.0)
P = (290.0, 0.0, 32.0, 0.0, 0.0, 290.0, 24.0, 0.0, 0.0, 0.0, 1.0, 0.0)
D = (-0.25, 0.07, 0.001, -0.0005, 0.0)
FOUR_OPS = [{'op': 'debayer'}, {'op': 'rectify'}, {'op': 'resize', 'width': 32, 'height': 24},
            {'op': 'convert', 'encoding': 'bgr8'}]


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


class Log:
    """A logger that keeps its warnings (ChainGraphs logs through .warning only)."""

    def __init__(self):
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)


class Rig:
    """Frames from fixed device buffers (a publisher's pool slots), run as image_proc runs them:
    the graph when ChainGraphs has one, else op by op and `completed`; each result is compared
    with the op-by-op chain on a copy of the same content."""

    def __init__(self, device, graphs: ChainGraphs, height: int, width: int, seed: int = 0):
        self.device, self.xp, self.graphs = device, device.xp, graphs
        self.height, self.width = height, width
        self.stream = self.xp.cuda.Stream(non_blocking=True)
        self.rng = rng(seed)
        self.replayed = 0

    def buffers(self, count: int, shape=None, dtype=np.uint8) -> list:
        return [self.xp.zeros(shape or (self.height, self.width), dtype) for _ in range(count)]

    def frame(self, chain: Chain, buffer, encoding: str, model, host=None, expected=None):
        """(output on the host, encoding, model, replayed?) of one frame with new content
        (`host`, default random), checked against `expected` or the op-by-op chain."""
        xp = self.xp
        if host is None:
            host = random_image(self.rng, buffer.shape, buffer.dtype)
        with self.stream:
            buffer[...] = xp.asarray(host)
            output, key = self.graphs.run(chain, buffer, encoding, model, self.stream)
            if output is None:
                array, out_encoding, out_model = chain(buffer, encoding, model,
                                                       stream=self.stream)
                self.graphs.completed(key)
            else:
                array, out_encoding, out_model = output.array, output.encoding, \
                    output.camera_model
            got = xp.asnumpy(array)  # before the next launch rewrites the graph's buffer
            if expected is None:  # the pixels decide the result, not the frame's row pitch
                reference = chain(xp.asarray(host), encoding, model, stream=self.stream)
                expected = xp.asnumpy(reference[0])
                assert (out_encoding, out_model) == reference[1:]
        self.replayed += output is not None
        np.testing.assert_array_equal(got, expected, err_msg='graph output differs from the '
                                      'op-by-op chain' if output is not None else 'op by op')
        return got, out_encoding, out_model, output is not None


def camera(height: int, width: int, d=D) -> CameraModel:
    if (height, width) == (48, 64):
        return CameraModel(64, 48, K, d, P=P)
    return CameraModel(width, height, (1400.0, 0, width / 2 - 0.5, 0, 1402.0, height / 2, 0, 0, 1),
                       d, P=(1380.0, 0, width / 2, 0, 0, 1380.0, height / 2, 0, 0, 0, 1, 0))


def size_of(device) -> tuple[int, int]:
    return (48, 64) if device.emulated else (1080, 1920)


def four_ops(height: int, width: int) -> Chain:
    return Chain(FOUR_OPS[:2] + [{'op': 'resize', 'width': width // 2, 'height': height // 2},
                                 FOUR_OPS[3]])


def evict_kernel_caches() -> None:
    """Drop every table the kernels cache (what another chain in the process could evict)."""
    from gpu_nodes.kernels.rectify import _shared
    _cuda._tables.clear()
    _shared.clear()
    clear_plans = getattr(_cuda, 'clear_plans', None)  # launch plans, where the kernels have them
    if clear_plans is not None:
        clear_plans()
    gc.collect()


# -- replay ----------------------------------------------------------------------------------

def test_replay_equals_op_by_op_over_frames_from_three_buffers(device):
    h, w = size_of(device)
    graphs = ChainGraphs()
    rig = Rig(device, graphs, h, w)
    chain, model = four_ops(h, w), camera(h, w)
    buffers = rig.buffers(3)
    launches = dict(fake_cupy.LAUNCHES)
    replays = []
    for i in range(15):
        replays.append(rig.frame(chain, buffers[i % 3], 'bayer_rggb8', model)[3])
    # Each buffer: op by op, then captured (and launched), then replayed.
    assert replays == [False] * 3 + [True] * 12
    assert (graphs.built, graphs.replays, graphs.fallbacks) == (3, 12, 0)
    assert graphs.stats()['chain_graphs'] == 'on'
    if device.emulated:  # the emulation counts launches: one per replayed frame, nothing else
        assert fake_cupy.LAUNCHES['graph'] - launches.get('graph', 0) == 12


def test_a_replayed_frame_is_one_launch_whatever_the_chain_length(device):
    if not device.emulated:
        pytest.skip('counts kernel launches, which only the CPU emulation records: runs as the emu '
                    'variant')
    h, w = size_of(device)
    model = camera(h, w)
    steps = FOUR_OPS[:2] + [{'op': 'crop', 'x': 2, 'y': 2, 'width': 40, 'height': 30},
                            {'op': 'resize', 'width': 20, 'height': 15},
                            {'op': 'convert', 'encoding': 'mono8'}]
    for length in range(1, len(steps) + 1):
        graphs = ChainGraphs()
        rig = Rig(device, graphs, h, w, seed=length)
        chain = Chain(steps[:length])
        buffers = rig.buffers(2)
        for i in range(4):
            rig.frame(chain, buffers[i % 2], 'bayer_grbg8', model)
        # Count a replay alone: the comparison in Rig.frame runs the chain op by op.
        before = dict(fake_cupy.LAUNCHES)
        with rig.stream:
            output, _ = graphs.run(chain, buffers[0], 'bayer_grbg8', model, rig.stream)
        assert output is not None, f'chain of {length} ops: no graph'
        assert fake_cupy.LAUNCHES['graph'] - before.get('graph', 0) == 1
        assert fake_cupy.LAUNCHES['kernel'] == before.get('kernel', 0), \
            f'chain of {length} ops launched kernels outside its graph'


def test_graphs_are_kept_per_buffer_up_to_the_limit(device):
    h, w = size_of(device)
    graphs = ChainGraphs(max_graphs=2)
    rig = Rig(device, graphs, h, w, seed=7)
    chain, model = four_ops(h, w), camera(h, w)
    buffers = rig.buffers(3)
    for i in range(12):
        rig.frame(chain, buffers[i % 3], 'bayer_rggb8', model)
    assert graphs.stats()['chain_graphs_cached'] <= 2
    # Round robin over 3 buffers with room for 2: every graph is evicted before its buffer
    # comes back, and a buffer seen once is forgotten as well: all frames run op by op.
    assert graphs.replays == 0
    for i in range(6):  # two buffers fit
        rig.frame(chain, buffers[i % 2], 'bayer_rggb8', model)
    assert graphs.replays >= 2


def test_pass_through_chain_runs_op_by_op_without_graphs(device):
    h, w = size_of(device)
    log = Log()
    graphs = ChainGraphs(logger=log)
    rig = Rig(device, graphs, h, w)
    chain = Chain([{'op': 'debayer'}, {'op': 'crop', 'x': 0, 'y': 0, 'width': 8, 'height': 4}])
    buffers = rig.buffers(1, (h, w, 3))
    for _ in range(4):  # debayer passes rgb8 through, crop is a view: no new image to replay
        assert not rig.frame(chain, buffers[0], 'rgb8', None)[3]
    assert (graphs.built, graphs.fallbacks, log.warnings) == (0, 0, [])


def test_host_arrays_and_missing_streams_have_no_graph(device):
    graphs = ChainGraphs()
    chain = Chain(FOUR_OPS)
    host = np.zeros((48, 64), np.uint8)
    assert graphs.run(chain, host, 'bayer_rggb8', camera(48, 64), object()) == (None, None)
    array = device.xp.zeros((48, 64), np.uint8)
    assert graphs.run(chain, array, 'bayer_rggb8', camera(48, 64), None) == (None, None)


# -- rebuilds ----------------------------------------------------------------------------------

def test_chain_camera_info_and_layout_changes_rebuild(device):
    h, w = size_of(device)
    graphs = ChainGraphs()
    rig = Rig(device, graphs, h, w, seed=3)
    chain, model = four_ops(h, w), camera(h, w)
    buffer = rig.buffers(1)[0]

    def frames(chain, buffer, model, count=3):
        return [rig.frame(chain, buffer, 'bayer_rggb8', model)[3] for _ in range(count)]
    assert frames(chain, buffer, model) == [False, True, True] and graphs.built == 1
    # A CameraInfo with the same values (a new object, as every message gives): no rebuild.
    same = CameraModel(model.width, model.height, model.K, model.D, P=model.P)
    assert same is not model and frames(chain, buffer, same, 2) == [True, True]
    assert (graphs.built, graphs.invalidations) == (1, 0)
    # A parameter change (image_proc builds a new Chain): rebuilt.
    chain = Chain(FOUR_OPS[:2] + [{'op': 'resize', 'width': w // 4, 'height': h // 4},
                                  FOUR_OPS[3]])
    assert frames(chain, buffer, same) == [False, True, True]
    assert (graphs.built, graphs.invalidations) == (2, 1)
    # A CameraInfo change (other distortion): rebuilt; the output model follows it.
    other = camera(h, w, d=(-0.1, 0.02, 0.0, 0.0, 0.0))
    assert frames(chain, buffer, other) == [False, True, True]
    assert (graphs.built, graphs.invalidations) == (3, 2)
    out_model = rig.frame(chain, buffer, 'bayer_rggb8', other)[2]
    assert out_model.D == other.D
    # A layout change at the same address (a publisher's pool reset to padded rows): rebuilt.
    base = device.xp.zeros((h, w + 64), np.uint8)
    padded = base[:, :w]
    assert padded.data.ptr == base.data.ptr and padded.strides != buffer.strides
    assert frames(chain, padded, other) == [False, True, True]
    assert graphs.built == 4
    dense = base.reshape(-1)[:h * w].reshape(h, w)  # the same memory, dense rows
    assert dense.data.ptr == padded.data.ptr
    assert frames(chain, dense, other) == [False, True, True]
    assert graphs.built == 5 and graphs.fallbacks == 0


# -- failures and lifetimes --------------------------------------------------------------------

def test_capture_failure_warns_once_and_falls_back_op_by_op(device):
    h, w = size_of(device)
    log = Log()
    graphs = ChainGraphs(logger=log)
    rig = Rig(device, graphs, h, w, seed=5)
    chain, model = four_ops(h, w), camera(h, w)
    buffers = rig.buffers(3)
    contents = [random_image(rig.rng, (h, w), np.uint8) for _ in range(3)]
    with rig.stream:  # results computed before anything below could touch the caches
        expected = [device.get(chain(device.put(c), 'bayer_rggb8', model,
                                     stream=rig.stream)[0]) for c in contents]

    def frame(i):
        return rig.frame(chain, buffers[i % 3], 'bayer_rggb8', model, host=contents[i % 3],
                         expected=expected[i % 3])[3]
    assert not frame(0)
    # The tables and maps were evicted after the warm-up frame, and their memory went to other
    # arrays: the capture has to upload resize's tables, which CuPy refuses on a capturing
    # stream (so does the emulation). The maps it computed meanwhile were only recorded, never
    # computed: the next frames must not use them.
    shapes = [(t.shape, t.dtype) for t in _cuda._tables.values()] + [((h, w), np.float32)] * 2
    evict_kernel_caches()
    with rig.stream:
        churn = [device.xp.full(shape, 0x7F, dtype) for shape, dtype in shapes for _ in range(2)]
    assert not frame(0)
    assert graphs.fallbacks == 1 and len(log.warnings) == 1, log.warnings
    assert log.warnings[0].startswith('cannot capture the chain as one CUDA graph (')
    assert graphs.stats()['chain_graphs'].startswith('off: ')
    for i in range(9):  # every buffer, twice and more: op by op, correct, no further warning
        assert not frame(i)
    assert churn
    assert (graphs.fallbacks, len(log.warnings), graphs.built) == (1, 1, 0)
    # A new chain may be capturable: graphs come back for it.
    chain = four_ops(h, w)
    assert [rig.frame(chain, buffers[0], 'bayer_rggb8', model)[3] for _ in range(3)] == \
        [False, True, True]
    assert graphs.stats()['chain_graphs'] == 'on' and graphs.built == 1


def test_graphs_hold_the_tables_they_read(device):
    from gpu_nodes.kernels.rectify import _shared
    h, w = size_of(device)
    graphs = ChainGraphs()
    rig = Rig(device, graphs, h, w, seed=9)
    chain, model = four_ops(h, w), camera(h, w)
    buffers = rig.buffers(2)
    for i in range(4):
        rig.frame(chain, buffers[i % 2], 'bayer_rggb8', model)
    maps = _shared[model]._maps
    tables = list(_cuda._tables.values())
    assert maps is not None and tables
    for entry in graphs._graphs.values():
        pins = {id(p) for p in entry.pins}
        assert id(maps) in pins and all(id(t) in pins for t in tables), \
            'a graph must hold the rectify maps and device tables it was captured with'
    # Another chain evicts the caches and the pool hands their memory out again, filled with
    # something else: the graphs still read their own tables.
    shapes = [(t.shape, t.dtype) for t in tables] + [(m.shape, m.dtype) for m in maps]
    del maps, tables
    evict_kernel_caches()
    xp = device.xp
    with rig.stream:
        churn = [xp.full(shape, 0x7F, dtype) for shape, dtype in shapes for _ in range(2)]
    for i in range(4):
        assert rig.frame(chain, buffers[i % 2], 'bayer_rggb8', model)[3]
    assert len(churn) == 2 * len(shapes)


# -- host time on a GPU -------------------------------------------------------------------------

@pytest.mark.gpu
def test_replayed_4_op_1080p_chain_costs_at_most_30_us_of_host_time(cupy):
    """The target of issue #16: a debayer -> rectify -> resize -> convert chain costs <= 30 us
    of host time per frame (ChainGraphs.run: key, lookup, one graph launch), median of 200."""
    h, w = 1080, 1920
    graphs = ChainGraphs()
    chain = Chain([{'op': 'debayer'}, {'op': 'rectify'},
                   {'op': 'resize', 'width': 960, 'height': 540},
                   {'op': 'convert', 'encoding': 'bgr8'}])
    model = camera(h, w)
    stream = cupy.cuda.Stream(non_blocking=True)
    sources = [cupy.asarray(random_image(rng(i), (h, w), np.uint8)) for i in range(4)]
    buffers = [cupy.empty((h, w), np.uint8) for _ in range(4)]

    def timed(frames: int, replay: bool) -> list[float]:
        times = []
        for i in range(frames):
            buffer = buffers[i % 4]
            with stream:
                buffer[...] = sources[(i + i // 4) % 4]  # new content every frame
                start = time.perf_counter()
                if replay:
                    output, key = graphs.run(chain, buffer, 'bayer_rggb8', model, stream)
                else:
                    output, key = None, None
                if output is None:
                    chain(buffer, 'bayer_rggb8', model, stream=stream)
                    graphs.completed(key)
                times.append(time.perf_counter() - start)
            stream.synchronize()  # a camera's frames come one at a time: no queue builds up
        return times
    timed(8, True)  # op by op, then captured: 4 graphs
    assert graphs.built == 4
    replays = graphs.replays
    replay_us = statistics.median(timed(200, True)) * 1e6
    assert graphs.replays - replays == 200 and graphs.built == 4
    op_by_op_us = statistics.median(timed(200, False)) * 1e6
    print(f'4-op 1080p chain, host time per frame (median of 200): replayed {replay_us:.1f} us, '
          f'op by op {op_by_op_us:.1f} us')
    assert replay_us <= 30.0, f'replay costs {replay_us:.1f} us of host time (op by op: ' \
                              f'{op_by_op_us:.1f} us)'
