"""``torch.distributed.argparse_util``: argparse actions whose defaults come from ``PET_*``
environment variables (how torchrun's flags can be set from the environment).

Example::

    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--nnodes", action=env, default="1")
    >>> parser.parse_args([]).nnodes                # "2" when PET_NNODES=2
    '1'
"""

from __future__ import annotations

import os
from argparse import Action

__all__ = ["env", "check_env"]


class env(Action):
    """An option whose default is ``$PET_<DEST>`` when set (else ``default``); a required
    option is satisfied by the environment variable too.

    Example::

        >>> _ = parser.add_argument("--role", action=env, default="default")  # doctest: +SKIP
    """

    def __init__(self, dest, default=None, required=False, **kwargs):
        default = os.environ.get(f"PET_{dest.upper()}", default)
        super().__init__(dest=dest, default=default, required=bool(required and not default),
                         **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


class check_env(Action):
    """A flag (``store_true``) that is also on when ``$PET_<DEST>`` is a non-zero number.

    Example::

        >>> _ = parser.add_argument("--standalone", action=check_env)      # doctest: +SKIP
    """

    def __init__(self, dest, default=False, **kwargs):
        default = bool(int(os.environ.get(f"PET_{dest.upper()}", "1" if default else "0")))
        super().__init__(dest=dest, const=True, default=default, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const)
