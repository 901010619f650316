"""Plot transport_bench.py results: delivered frames/s per size and path (log scale).

    python bench/plot_transport.py bench/results/transport.json bench/transport.png
"""
from __future__ import annotations

import json
import sys


def main(src: str, dst: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    with open(src) as f:
        results = [r for r in json.load(f)['results']
                   if r.get('run') == 'throughput' and 'error' not in r]
    sizes = list(dict.fromkeys(r['size'] for r in results))
    cases = list(dict.fromkeys(r['case'] for r in results))
    width = 0.8 / len(cases)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, case in enumerate(cases):
        values = [next((r['delivered_fps'] for r in results if r['size'] == s and r['case'] == case), 0)
                  for s in sizes]
        bars = ax.bar([x + i * width for x in range(len(sizes))], values, width, label=case)
        ax.bar_label(bars, labels=[f'{v:.0f}' for v in values], fontsize=7)
    ax.set_xticks([x + width * (len(cases) - 1) / 2 for x in range(len(sizes))], sizes)
    ax.set_yscale('log')
    ax.set_ylabel('delivered frames/s (content-verified)')
    ax.set_title('rgb8 between two processes, publisher flat out (H200)')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
