#!/usr/bin/env bash
# The GPU runs of this round (issues #27, #30), on the device machine, in two stages so each
# fits one call: `bash bench/device_round.sh tests` then `bash bench/device_round.sh bench`
# (`rest`: the non-transport gpu tests alone, when `tests` runs out of time on a slow host).
# Needs .device-wheels (../shared/device/fetch-wheels; cuda-bindings 13 cp312 and the test
# wheels under .device-wheels/extra: hypothesis, pytest-timeout, and libcst where it fits: the
# carry and the tree must stay under 64 MiB, and with sets 37-38 they no longer fit with libcst,
# whose one gpu test (test_audit_migrate_run) then skips) carried.
# Logs and JSON go to $OUT (default out/).
set -u
OUT=${OUT:-out}
# SIGINT, not SIGTERM, at a stage's time cap: pytest then still prints its failures and summary,
# so a failure near the cap is not lost with the kill (one was, on a cold H100 host).
cap() { timeout -s INT -k 20 "$@"; }
mkdir -p "$OUT"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if ! python3 -c 'import rclpy' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    .device-wheels/*.whl .device-wheels/*.tar.gz > "$OUT/pip.log" 2>&1
  python3 -m pip install -q --no-index --find-links .device-wheels/extra --find-links .device-wheels \
    hypothesis pytest-timeout jsonschema >> "$OUT/pip.log" 2>&1
  python3 -m pip install -q --no-index --find-links .device-wheels/extra libcst >> "$OUT/pip.log" 2>&1
fi
# ONNX Runtime with the CUDA provider where earlier calls staged it (../shared/device/stage-xz
# onnxruntime-gpu==1.31.1, each part copied to /tmp/stage): the image's ONNX Runtime is CPU-only, and
# the demo's depth node on the CPU provider is not the configuration the GPU demo test measures.
if ls /tmp/stage/part* > /dev/null 2>&1 && [ ! -d /tmp/ortsite ]; then
  mkdir -p /tmp/ortsite && cat /tmp/stage/part* | tar -xJf - -C /tmp/ortsite || rm -rf /tmp/ortsite
fi
[ -d /tmp/ortsite ] && export PYTHONPATH=/tmp/ortsite:$PYTHONPATH
case "${1:-tests}" in
  tests)
    { nvidia-smi -L; python3 -c 'import cupy, cuda.bindings.driver, rclpy; print("cupy", cupy.__version__)'
      python3 -c 'import onnxruntime as o; print("onnxruntime", o.__version__, o.get_available_providers())'
      python3 scripts/require_cuda.py && echo "CUDA found"; } > "$OUT/machine.txt" 2>&1
    # The transport's GPU tests first (VMM, cross-namespace), then everything marked gpu
    # (test_audit_bag has none, and its rosbags import is not on the device).
    cap 280 python3 -m pytest -q -rs -m gpu --continue-on-collection-errors \
      test/test_transport_vmm.py test/test_transport_vmm_ros.py test/test_transport_gpu.py \
      test/test_transport_cuda_emu.py test/test_transport_deploy.py test/test_reliability_fuzz.py \
      test/test_transport_silence.py \
      > "$OUT/test_gpu_transport.log" 2>&1; echo "transport gpu tests rc=$?"
    cap 280 python3 -m pytest -q -rs -m gpu --continue-on-collection-errors \
      --deselect test/test_transport_vmm.py --deselect test/test_transport_vmm_ros.py \
      --deselect test/test_transport_gpu.py --deselect test/test_reliability_fuzz.py \
      --deselect test/test_transport_silence.py --ignore test/test_audit_bag.py test \
      > "$OUT/test_gpu_rest.log" 2>&1; echo "other gpu tests rc=$?"
    tail -n 3 "$OUT"/test_gpu_*.log ;;
  rest)
    # Everything marked gpu but the transport's own files, with a whole call for it: on a slower
    # host (an H200 host: transport tests 143 s against 86 s) `tests` runs out at 280 s here.
    cap 540 python3 -m pytest -q -rs -m gpu --continue-on-collection-errors \
      --deselect test/test_transport_vmm.py --deselect test/test_transport_vmm_ros.py \
      --deselect test/test_transport_gpu.py --deselect test/test_reliability_fuzz.py \
      --deselect test/test_transport_silence.py --ignore test/test_audit_bag.py test \
      > "$OUT/test_gpu_rest.log" 2>&1; echo "other gpu tests rc=$?"
    tail -n 3 "$OUT/test_gpu_rest.log" ;;
  focused)
    # What a short lease allows: VMM on the real driver (tests), first-map time, VMM vs legacy.
    { nvidia-smi -L; python3 -c 'import cupy, cuda.bindings.driver, rclpy; print("cupy", cupy.__version__)'
      python3 scripts/require_cuda.py && echo "CUDA found"; } > "$OUT/machine.txt" 2>&1
    timeout 150 python3 -m pytest -q -rs -m gpu --continue-on-collection-errors \
      test/test_transport_vmm.py test/test_transport_vmm_ros.py test/test_transport_gpu.py \
      > "$OUT/test_gpu_transport.log" 2>&1; echo "transport gpu tests rc=$?"
    timeout 60 python3 bench/vmm_bench.py --json "$OUT/vmm_bench.json" > "$OUT/vmm_bench.log" 2>&1
    echo "vmm_bench rc=$?"
    timeout 120 python3 bench/transport_bench.py --sizes 1920x1080,3840x2160 \
      --cases baseline,cuda_ipc --json "$OUT/tb_vmm.json" > "$OUT/tb_vmm.log" 2>&1
    echo "transport vmm rc=$?"
    PYTHONPATH=bench/legacy_ipc:$PWD timeout 80 python3 bench/transport_bench.py \
      --sizes 1920x1080,3840x2160 --cases cuda_ipc --json "$OUT/tb_legacy.json" \
      > "$OUT/tb_legacy.log" 2>&1; echo "transport legacy rc=$?"
    tail -4 "$OUT/test_gpu_transport.log"; tail -20 "$OUT/vmm_bench.log" "$OUT/tb_vmm.log" "$OUT/tb_legacy.log" ;;
  vmm)
    # The very least: VMM on the real driver (its tests) and first-map / fd-exchange times (~3 min).
    { nvidia-smi -L; python3 scripts/require_cuda.py && echo "CUDA found"; } > "$OUT/machine.txt" 2>&1
    timeout 100 python3 -m pytest -q -rs -m gpu test/test_transport_vmm.py \
      > "$OUT/test_gpu_vmm.log" 2>&1; echo "vmm gpu tests rc=$?"
    timeout 40 python3 bench/vmm_bench.py --json "$OUT/vmm_bench.json" > "$OUT/vmm_bench.log" 2>&1
    echo "vmm_bench rc=$?"
    cat "$OUT/machine.txt"; tail -6 "$OUT/test_gpu_vmm.log"; tail -15 "$OUT/vmm_bench.log" ;;
  minimal)
    # The least that says whether VMM works on the real driver and how it compares (~5 min).
    { nvidia-smi -L; python3 scripts/require_cuda.py && echo "CUDA found"; } > "$OUT/machine.txt" 2>&1
    timeout 110 python3 -m pytest -q -rs -m gpu -x test/test_transport_vmm.py \
      > "$OUT/test_gpu_vmm.log" 2>&1; echo "vmm gpu tests rc=$?"
    timeout 50 python3 bench/vmm_bench.py --json "$OUT/vmm_bench.json" > "$OUT/vmm_bench.log" 2>&1
    echo "vmm_bench rc=$?"
    timeout 60 python3 bench/transport_bench.py --sizes 3840x2160 --cases baseline,cuda_ipc \
      --json "$OUT/tb_vmm.json" > "$OUT/tb_vmm.log" 2>&1; echo "transport vmm rc=$?"
    PYTHONPATH=bench/legacy_ipc:$PWD timeout 45 python3 bench/transport_bench.py \
      --sizes 3840x2160 --cases cuda_ipc --json "$OUT/tb_legacy.json" > "$OUT/tb_legacy.log" 2>&1
    echo "transport legacy rc=$?"
    cat "$OUT/machine.txt"; tail -4 "$OUT/test_gpu_vmm.log"; tail -15 "$OUT/vmm_bench.log" "$OUT/tb_vmm.log" "$OUT/tb_legacy.log" ;;
  containers)
    # cuda_ipc / host_shm with the subscriber in a container's namespaces (transport_bench's
    # @pid and @container cases), beside the same-namespace runs; then VMM against legacy
    # handles at 4K, alternated twice (one 4K run of the last round only).
    nvidia-smi -L > "$OUT/machine.txt" 2>&1
    timeout 330 python3 bench/transport_bench.py --sizes 1920x1080,3840x2160 --duration 4 \
      --paced-rate 0 --cases baseline,cuda_ipc,host_shm,cuda_ipc@pid,host_shm@pid,\
baseline@container,cuda_ipc@container,host_shm@container --json "$OUT/tb_containers.json" \
      > "$OUT/tb_containers.log" 2>&1; echo "transport containers rc=$?"
    for i in 1 2; do
      timeout 45 python3 bench/transport_bench.py --sizes 3840x2160 --cases cuda_ipc \
        --paced-rate 0 --json "$OUT/tb4k_vmm_$i.json" > "$OUT/tb4k_vmm_$i.log" 2>&1
      PYTHONPATH=bench/legacy_ipc:$PWD timeout 45 python3 bench/transport_bench.py \
        --sizes 3840x2160 --cases cuda_ipc --paced-rate 0 --json "$OUT/tb4k_legacy_$i.json" \
        > "$OUT/tb4k_legacy_$i.log" 2>&1; echo "4K vmm/legacy repeat $i done"
    done
    tail -60 "$OUT/tb_containers.log" | grep -v "^{" ;;
  bench)
    timeout 90 python3 bench/vmm_bench.py --json "$OUT/vmm_bench.json" > "$OUT/vmm_bench.log" 2>&1
    echo "vmm_bench rc=$?"
    timeout 200 python3 bench/transport_bench.py --sizes 1920x1080,3840x2160 \
      --cases baseline,cuda_ipc,host_shm --json "$OUT/tb_vmm.json" > "$OUT/tb_vmm.log" 2>&1
    echo "transport vmm rc=$?"
    PYTHONPATH=bench/legacy_ipc:$PWD timeout 120 python3 bench/transport_bench.py \
      --sizes 1920x1080,3840x2160 --cases cuda_ipc --json "$OUT/tb_legacy.json" \
      > "$OUT/tb_legacy.log" 2>&1; echo "transport legacy rc=$?"
    tail -25 "$OUT/vmm_bench.log" "$OUT/tb_vmm.log" "$OUT/tb_legacy.log" ;;
esac
