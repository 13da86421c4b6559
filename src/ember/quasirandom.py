"""Quasi-random sequences (``torch.quasirandom``): the Sobol engine.

A Sobol sequence in ``d`` dimensions fills the unit cube more evenly than random points. Each
dimension has 30 *direction numbers* (30-bit integers); point ``i + 1`` is point ``i`` with
the direction number of the lowest zero bit of ``i`` XOR-ed in (the Gray-code construction of
Antonov and Saleev), divided by 2**30. The direction numbers are Joe and Kuo's (search
criterion D(6), up to 21201 dimensions), the set torch uses; ember reads them from the table
SciPy ships for ``scipy.stats.qmc.Sobol``.

Scrambling (Owen's linear matrix scramble plus a random digital shift) draws its random bits
from ember's CPU generator in the same order as torch, so a seed gives torch's points.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from . import _dtype as dt
from ._device import CPU
from ._tensor import Tensor

__all__ = ["SobolEngine"]

_MAXBIT = 30
_MAXDIM = 21201


@functools.lru_cache(maxsize=1)
def _joe_kuo_table():
    """Joe and Kuo's primitive polynomials and initial direction numbers (21201 rows)."""
    import scipy.stats

    path = os.path.join(os.path.dirname(scipy.stats.__file__), "_sobol_direction_numbers.npz")
    with np.load(path) as table:
        return table["poly"].astype(np.int64), table["vinit"].astype(np.int64)


def _direction_numbers(dimension):
    """The (dimension, 30) direction numbers, already shifted to 30-bit integers.

    Row 0 is all ones (the van der Corput sequence); row d extends its initial numbers with
    the recurrence of its primitive polynomial (Bratley and Fox, Algorithm 659)."""
    polys, initial = _joe_kuo_table()
    state = np.zeros((dimension, _MAXBIT), dtype=np.int64)
    state[0] = 1
    for d in range(1, dimension):
        poly = int(polys[d])
        degree = poly.bit_length() - 1
        row = state[d]
        row[:degree] = initial[d, :degree]
        for j in range(degree, _MAXBIT):
            value = row[j - degree]
            for k in range(degree):
                if (poly >> (degree - 1 - k)) & 1:
                    value ^= row[j - k - 1] << (k + 1)
            row[j] = value
    return state << np.arange(_MAXBIT - 1, -1, -1, dtype=np.int64)


def _lowest_zero_bits(start, count):
    """The position of the lowest zero bit of each of ``start, ..., start + count - 1``."""
    numbers = np.arange(start, start + count, dtype=np.int64)
    # n ^ (n + 1) has ones up to and including the lowest zero bit of n
    return np.log2((numbers ^ (numbers + 1)) + 1).astype(np.int64) - 1


def _parity(values):
    """1 where ``values`` has an odd number of set bits (elementwise), else 0."""
    result = np.zeros_like(values)
    for bit in range(_MAXBIT):
        result ^= (values >> bit) & 1
    return result


def _scrambled(state, lower_triangular):
    """Owen's linear matrix scramble: each direction number's bits times a random lower
    triangular bit matrix with ones on its diagonal, over GF(2)."""
    matrices = lower_triangular.copy()
    diagonal = np.arange(_MAXBIT)
    matrices[:, diagonal, diagonal] = 1
    # each row of each matrix read as a 30-bit number, its first column the highest bit
    rows = (matrices << np.arange(_MAXBIT - 1, -1, -1, dtype=np.int64)).sum(-1)
    # bit (29 - p) of a new number is the parity of (row p & old number)
    bits = _parity(rows[:, None, :] & state[:, :, None])
    return (bits << np.arange(_MAXBIT - 1, -1, -1, dtype=np.int64)).sum(-1)


class SobolEngine:
    """A generator of (optionally scrambled) Sobol sequences in up to 21201 dimensions.

    Draws continue the sequence: ``draw(2)`` then ``draw(2)`` gives the same points as
    ``draw(4)``. With ``scramble=True`` the points are randomised (from ``seed``, or from the
    global generator when it is None).

    Example::

        >>> engine = ember.quasirandom.SobolEngine(dimension=2)
        >>> engine.draw(4)
        tensor([[0.0000, 0.0000],
                [0.5000, 0.5000],
                [0.7500, 0.2500],
                [0.2500, 0.7500]])
    """

    MAXBIT = _MAXBIT
    MAXDIM = _MAXDIM

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.sobolstate = Tensor._make(_direction_numbers(dimension), CPU)
        if scramble:
            self._scramble()
        else:
            self.shift = Tensor._make(np.zeros(dimension, dtype=np.int64), CPU)
        self.quasi = self.shift.clone()
        # torch divides in the default float dtype at construction, then casts when drawing
        first = self.quasi._data.astype(dt.get_default_dtype().np) / 2 ** self.MAXBIT
        self._first_point = Tensor._make(first.reshape(1, -1), CPU)
        self.num_generated = 0

    def _scramble(self):
        from .ops.random import Generator, randint

        generator = None
        if self.seed is not None:
            generator = Generator()
            generator.manual_seed(self.seed)
        shift_bits = randint(2, (self.dimension, self.MAXBIT), generator=generator)._data
        self.shift = Tensor._make(shift_bits @ (1 << np.arange(self.MAXBIT, dtype=np.int64)),
                                  CPU)
        triangular = randint(2, (self.dimension, self.MAXBIT, self.MAXBIT),
                             generator=generator)._data
        self.sobolstate._data[...] = _scrambled(self.sobolstate._data, np.tril(triangular))

    def _advance(self, count, first_index):
        """The next ``count`` integer points after ``quasi`` (each row one point), starting
        from sequence index ``first_index``; ``quasi`` becomes the last of them."""
        columns = _lowest_zero_bits(first_index, count)
        points = np.bitwise_xor.accumulate(self.sobolstate._data[:, columns].T, axis=0) \
            if count else np.zeros((0, self.dimension), dtype=np.int64)
        points ^= self.quasi._data
        if count:
            self.quasi._data[...] = points[-1]
        return points

    def _draw_points(self, count, first_index, dtype):
        if dtype not in (dt.float32, dt.float64):
            name = {"float16": "Half", "bfloat16": "BFloat16"}.get(dtype.name, dtype.name)
            raise RuntimeError(f"\"_sobol_engine_draw\" not implemented for '{name}'")
        points = self._advance(count, first_index)
        return points.astype(dtype.np) * dtype.np.type(1.0 / 2 ** self.MAXBIT)

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points of the sequence, an ``(n, dimension)`` tensor.

        Example::

            >>> ember.quasirandom.SobolEngine(3).draw(2, dtype=ember.float64)
            tensor([[0.0000, 0.0000, 0.0000],
                    [0.5000, 0.5000, 0.5000]], dtype=ember.float64)
        """
        dtype = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
        first = self._first_point._data.astype(dtype.np)
        if self.num_generated == 0:
            if n == 1:
                values = first
            else:
                values = np.concatenate([first, self._draw_points(n - 1, 0, dtype)])
        else:
            values = self._draw_points(n, self.num_generated - 1, dtype)
        self.num_generated += n
        result = Tensor._make(values, CPU)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next ``2**m`` points; the total drawn must stay a power of two (the points'
        balance properties need it).

        Example::

            >>> ember.quasirandom.SobolEngine(1).draw_base2(2).flatten()
            tensor([0.0000, 0.5000, 0.7500, 0.2500])
        """
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(f"The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total}. If you "
                             f"still want to do this, please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Start the sequence again from its first point; returns the engine.

        Example::

            >>> engine = ember.quasirandom.SobolEngine(1)
            >>> _ = engine.draw(3)
            >>> engine.reset().draw(1)
            tensor([[0.]])
        """
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip the next ``n`` points (as drawing them would); returns the engine.

        Example::

            >>> ember.quasirandom.SobolEngine(1).fast_forward(2).draw(1)
            tensor([[0.7500]])
        """
        if self.num_generated == 0:
            self._advance(max(n - 1, 0), 0)
        else:
            self._advance(max(n, 0), self.num_generated - 1)
        self.num_generated += n
        return self

    def __repr__(self):
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(fields)})"
