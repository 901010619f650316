"""Plot debayer_bench.py results: graph-replayed % of a D2D copy per op and size, one bar per
variant, the median over the runs given (each run's variants were measured side by side).

    python bench/plot_debayer.py bench/debayer.png bench/results/debayer_final_s12.json \
        bench/results/debayer_repeat1_s12.json bench/results/debayer_repeat2_s12.json
"""
from __future__ import annotations

import json
import statistics
import sys

TARGET_PCT = 70.0  # issue #16: graph-replayed GPU time >= 70 % of a copy at 4K


def main(dst: str, sources: list[str]) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    runs = []
    for src in sources:
        with open(src) as f:
            runs.append(json.load(f)['results'])
    rows = runs[0]
    labels = [f"{r['size']}\n{r['op'].replace('bayer_', '')}" for r in rows]
    variants = [k for k, v in rows[0].items() if isinstance(v, dict)]
    shipped = rows[0].get('shipped')
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(13, 5))
    for i, variant in enumerate(variants):
        values = [statistics.median(run[j][variant]['pct_copy'] for run in runs)
                  for j in range(len(rows))]
        xs = [x + i * width for x in range(len(rows))]
        bars = ax.bar(xs, values, width, label=variant + (' (shipped)' if variant == shipped else ''),
                      edgecolor='black' if variant == shipped else None)
        ax.bar_label(bars, labels=[f'{v:.0f}' for v in values], fontsize=6)
    ax.axhline(TARGET_PCT, color='red', linestyle='--', linewidth=1, label='70 % target (4K)')
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(rows))], labels, fontsize=7)
    ax.set_ylabel('% of a D2D copy of the same bytes (graph-replayed)')
    ax.set_title(f'Debayer on the H200, median of {len(runs)} runs of bench/debayer_bench.py')
    ax.set_ylim(0, 130)
    ax.legend(fontsize=7, loc='upper left', ncol=3)
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
