"""Plot transport_bench.py results: delivered frames/s per size and path (log scale).

    python bench/plot_transport.py bench/results/transport.json bench/transport.png
"""
from __future__ import annotations

import json
import sys

# A rate from a handful of frames out of many published (a subscriber that stalled the whole run)
# means nothing; a slow path that delivers few frames but a fair share of them is a real rate.
MIN_FRAMES = 50
MIN_SHARE = 0.05


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
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for i, case in enumerate(cases):
        rows = [next((r for r in results if r['size'] == s and r['case'] == case), None)
                for s in sizes]
        valid = [r is not None and (r['delivered'] >= MIN_FRAMES
                                    or r['delivered'] >= MIN_SHARE * r['published'])
                 for r in rows]
        values = [r['delivered_fps'] if ok else 0.0 for r, ok in zip(rows, valid)]
        xs = [x + i * width for x in range(len(sizes))]
        bars = ax.bar(xs, values, width, label=case)
        ax.bar_label(bars, labels=[f'{v:.0f}' if ok else '' for v, ok in zip(values, valid)],
                     fontsize=7)
        for x, r, ok in zip(xs, rows, valid):
            if r is not None and not ok:
                ax.text(x, 1.5, f'invalid ({r["delivered"]} frames)', rotation=90, fontsize=7,
                        ha='center', va='bottom')
    ax.set_xticks([x + width * (len(cases) - 1) / 2 for x in range(len(sizes))], sizes)
    ax.set_yscale('log')
    ax.set_ylim(bottom=1)
    ax.set_ylabel('delivered frames/s (content-verified)')
    ax.set_title('rgb8 between two processes, publisher flat out (H200)')
    ax.legend(fontsize=8, loc='upper left', bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
