"""``torch.utils.model_zoo``: the older name of :func:`ember.hub.load_state_dict_from_url`.

Example::

    >>> from ember.utils import model_zoo
    >>> model_zoo.load_url is ember.hub.load_state_dict_from_url
    True
"""

from ..hub import load_state_dict_from_url as load_url

try:
    from tqdm import tqdm
except ImportError:  # tqdm is optional: a silent stand-in with its interface
    class tqdm:  # noqa: N801 - tqdm's name
        """A progress bar that shows nothing (the ``tqdm`` package is not installed)."""

        def __init__(self, total=None, disable=False, unit=None, *args, **kwargs):
            self.total, self.n = total, 0

        def update(self, n):
            self.n += n

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

__all__ = ["load_url", "tqdm"]
