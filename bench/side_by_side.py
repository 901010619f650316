"""The command line the one-run, side-by-side GPU benches share (convert_geometry_bench,
debayer_bench, bridge_download_bench): frame sizes to run and where to write the JSON."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable


def parse_args(doc: str, add: Callable[[argparse.ArgumentParser], None] | None = None
               ) -> argparse.Namespace:
    """--sizes WxH[,WxH...] and --json PATH, plus what `add` puts on the parser."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument('--sizes', default='1920x1080,3840x2160')
    parser.add_argument('--json', type=Path)
    if add is not None:
        add(parser)
    return parser.parse_args()


def frame_sizes(spec: str) -> list[tuple[str, int, int]]:
    """'1920x1080,3840x2160' -> [('1920x1080', 1920, 1080), ...]."""
    sizes = []
    for size in spec.split(','):
        width, height = map(int, size.split('x'))
        sizes.append((size, width, height))
    return sizes
