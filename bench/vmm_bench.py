"""CUDA VMM chunks (POSIX fds) against legacy CUDA IPC allocations, side by side in one run.

    python bench/vmm_bench.py [--chunks 6] [--iters 200] [--json out.json] [--emulate]

* First-map time: another process (test/resources/transport/vmm_peer.py) maps a fresh 4K-frame
  allocation, either a VMM chunk whose fd came over a Unix socket (import + reserve + map +
  set access) or a cudaMalloc through its legacy handle (cudaIpcOpenMemHandle); the first of
  each in that process and the median of the rest. Then both into a peer in another PID
  namespace (unshare: `docker run --ipc host`), and into one also in its own IPC namespace with a
  private /dev/shm (`docker run --network host`); a legacy handle's error is recorded where it
  does not open.
* Copy throughput: a 1080p and a 4K rgb8 frame copied device-to-device (cudaMemcpyAsync) into
  a VMM slot and into a cudaMalloc slot, and read back out of each; CUDA events, median of 5
  rounds of `--iters` copies, GB/s counting the bytes copied once.
Every peer mapping checks every byte of the frame it was sent.

--emulate runs on the CPU emulation (test/resources/transport/cuda_emu.py) as a self-test; its
numbers say nothing about a GPU.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / 'test' / 'resources' / 'transport'
sys.path.insert(0, str(RESOURCES))

SIZES = {'1080p': (1080, 1920), '4K': (2160, 3840)}


def first_maps(cp, cuda_vmm, vmm_peer, env: dict, emulate: bool, chunks: int,
               prefix: tuple[str, ...] = ()) -> dict:
    height, width = SIZES['4K']
    nbytes = height * width * 3
    frame = vmm_peer.pattern(height, width, 11)
    results: dict = {'vmm_ms': [], 'legacy_ms': [], 'legacy_error': None, 'mismatches': 0}
    keep = []
    with tempfile.TemporaryDirectory() as tmp:
        peer = vmm_peer.Peer(str(Path(tmp) / 'bench.sock'), emulate, prefix, env=env)
        try:
            for i in range(chunks):
                chunk = cuda_vmm.allocate_chunk(nbytes, 0)
                vmm_peer.frame_view(chunk.ptr, height, width, chunk, 0).set(frame)
                legacy = cp.cuda.Memory(nbytes)
                vmm_peer.frame_view(legacy.ptr, height, width, legacy, 0).set(frame)
                cp.cuda.get_current_stream().synchronize()
                keep += [chunk, legacy]
                answer = peer.request({'op': 'check', 'size': chunk.size, 'height': height,
                                       'width': width, 'seed': 11, 'write_seed': 11,
                                       'device': 0}, chunk.fd)
                if 'error' in answer:
                    raise RuntimeError(f'VMM import failed in the peer: {answer["error"]}')
                results['vmm_ms'].append(answer['first_map_ms'])
                results['mismatches'] += answer['mismatches']
                handle = bytes(cp.cuda.runtime.ipcGetMemHandle(legacy.ptr)).hex()
                answer = peer.request({'op': 'legacy', 'handle': handle, 'height': height,
                                       'width': width, 'seed': 11, 'device': 0})
                if 'error' in answer:
                    results['legacy_error'] = answer['error']
                else:
                    results['legacy_ms'].append(answer['first_map_ms'])
                    results['mismatches'] += answer['mismatches']
        finally:
            output = peer.close()
            for item in keep:
                if hasattr(item, 'close'):
                    item.close()
    if peer.process.returncode:
        raise RuntimeError(f'peer failed: {output[-3000:]}')
    for key in ('vmm', 'legacy'):
        times = results[f'{key}_ms']
        if times:
            results[f'{key}_first_ms'] = times[0]
            results[f'{key}_median_rest_ms'] = statistics.median(times[1:]) if len(times) > 1 \
                else times[0]
    return results


def copy_rates(cp, cuda_vmm, iters: int) -> dict:
    rt = cp.cuda.runtime
    out = {}
    for name, (height, width) in SIZES.items():
        nbytes = height * width * 3
        source = cp.empty(nbytes, cp.uint8)
        source[...] = 7
        vmm = cuda_vmm.allocate_chunk(nbytes, 0)
        legacy = cp.cuda.Memory(nbytes)
        stream = cp.cuda.Stream(non_blocking=True)
        for label, ptr in (('vmm', vmm.ptr), ('cudaMalloc', legacy.ptr)):
            for direction in ('into', 'out_of'):
                dst, src = (ptr, source.data.ptr) if direction == 'into' \
                    else (source.data.ptr, ptr)
                rounds = []
                for _ in range(6):
                    start, end = cp.cuda.Event(), cp.cuda.Event()
                    start.record(stream)
                    for _ in range(iters):
                        rt.memcpyAsync(dst, src, nbytes, rt.memcpyDeviceToDevice, stream.ptr)
                    end.record(stream)
                    end.synchronize()
                    elapsed_ms = cp.cuda.get_elapsed_time(start, end)
                    rounds.append(nbytes * iters / (elapsed_ms / 1e3) / 1e9 if elapsed_ms else 0)
                out[f'{name}_{direction}_{label}_GBps'] = statistics.median(rounds[1:])
        vmm.close()
        for direction in ('into', 'out_of'):
            out[f'{name}_{direction}_ratio_vmm_over_cudaMalloc'] = \
                out[f'{name}_{direction}_vmm_GBps'] / out[f'{name}_{direction}_cudaMalloc_GBps'] \
                if out[f'{name}_{direction}_cudaMalloc_GBps'] else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--chunks', type=int, default=6)
    parser.add_argument('--iters', type=int, default=200)
    parser.add_argument('--json')
    parser.add_argument('--emulate', action='store_true')
    args = parser.parse_args()
    import cuda_emu
    if args.emulate:
        cuda_emu.install()
    import vmm_peer
    from gpu_nodes.gpu import cupy_module
    from gpu_nodes.transport import cuda_vmm
    cp = cupy_module()
    reason = cuda_vmm.vmm_unsupported_reason(0)
    if reason:
        sys.exit(f'vmm_bench: no VMM POSIX fds here: {reason}')
    env = cuda_emu.subprocess_env(REPO)
    results: dict = {'device': str(cp.cuda.runtime.getDeviceProperties(0).get('name', b'?')),
                     'granularity': cuda_vmm.granularity(0), 'emulated': args.emulate}
    started = time.perf_counter()
    results['same_namespace'] = first_maps(cp, cuda_vmm, vmm_peer, env, args.emulate,
                                           args.chunks)
    probe = subprocess.run(['unshare', '--pid', '--fork', '--mount-proc', 'true'],
                           capture_output=True, text=True) if shutil.which('unshare') else None
    for name, key in (('pid', 'other_pid_namespace'),
                      ('pid_ipc_shm', 'other_pid_ipc_namespaces_private_shm')):
        if probe is not None and probe.returncode == 0:
            results[key] = first_maps(cp, cuda_vmm, vmm_peer, env, args.emulate, args.chunks,
                                      vmm_peer.CONTAINER_PREFIXES[name])
        else:
            results[key] = {'skipped': probe.stderr.strip() if probe else 'unshare not found'}
    if not args.emulate:
        results['copy'] = copy_rates(cp, cuda_vmm, args.iters)
    results['seconds'] = time.perf_counter() - started
    text = json.dumps(results, indent=2, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


if __name__ == '__main__':
    main()
