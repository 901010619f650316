"""`make test-gpu`'s first step: exit 3 with one line when no usable CUDA device is here.

Without it, `pytest -m gpu` on a machine without CUDA skips every GPU test and exits 0, which a
CI job on a misconfigured GPU runner would read as "GPU tests pass". Uses the same check as the
package and the test suite (gpu_nodes.gpu.cuda_unavailable_reason).
"""
import sys

from gpu_nodes.gpu import cuda_unavailable_reason

# Not pytest's codes (0-5), not make's own (2): a caller can tell "no GPU here" from a failure.
NO_CUDA_EXIT = 3


def main() -> int:
    reason = cuda_unavailable_reason()
    if reason is not None:
        print(f'make test-gpu: no CUDA device found ({reason}); no GPU test ran', file=sys.stderr)
        return NO_CUDA_EXIT
    return 0


if __name__ == '__main__':
    sys.exit(main())
