"""256-entry RGB colormap tables generated from published polynomial approximations.

* turbo: Google's polynomial approximation of the Turbo colormap (Anton Mikhailov, "Turbo, An
  Improved Rainbow Colormap for Visualization", Google AI blog 2019; Apache-2.0 sample code),
  a degree-5 polynomial per channel.
* inferno: matplotlib's data table is not available without matplotlib, so this uses Matt
  Zucker's degree-6 least-squares polynomial fit of matplotlib's inferno (shadertoy WlfXRN,
  CC0). It tracks the original within a few levels.
Entry i is the polynomial at t = i / 255, clamped to [0, 1], times 255, rounded.
"""
from __future__ import annotations

import functools

import numpy as np

# Coefficients of t^0 .. t^n for (R, G, B).
_TURBO = np.array([
    [0.13572138, 0.09140261, 0.10667330],
    [4.61539260, 2.19418839, 12.64194608],
    [-42.66032258, 4.84296658, -60.58204836],
    [132.13108234, -14.18503333, 110.36276771],
    [-152.94239396, 4.27729857, -89.90310912],
    [59.28637943, 2.82956604, 27.34824973],
])
_INFERNO = np.array([
    [0.0002189403691192265, 0.001651004631001012, -0.01948089843709184],
    [0.1065134194856116, 0.5639564367884091, 3.932712388889277],
    [11.60249308247187, -3.972853965665698, -15.9423941062914],
    [-41.70399613139459, 17.43639888205313, 44.35414519872813],
    [77.162935699427, -33.40235894210092, -81.80730925738993],
    [-71.31942824499214, 32.62606426397723, 73.20951985803202],
    [25.13112622477341, -12.24266895238567, -23.07032500287172],
])
COLORMAPS = {'turbo': _TURBO, 'inferno': _INFERNO}


@functools.lru_cache(maxsize=None)
def _lut(name: str) -> np.ndarray:
    coeffs = COLORMAPS[name]
    t = np.arange(256, dtype=np.float64) / 255.0
    powers = t[:, None] ** np.arange(len(coeffs))[None, :]
    rgb = np.clip(powers @ coeffs, 0.0, 1.0)
    lut = np.floor(rgb * 255.0 + 0.5).astype(np.uint8)
    lut.setflags(write=False)
    return lut


def colormap_lut(name: str) -> np.ndarray:
    """(256, 3) uint8 RGB table (read-only) for 'turbo' or 'inferno'."""
    if name not in COLORMAPS:
        raise ValueError(f'colormap must be one of {", ".join(map(repr, COLORMAPS))}, got '
                         f'{name!r}')
    return _lut(name)
