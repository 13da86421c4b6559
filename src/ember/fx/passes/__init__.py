"""``ember.fx.passes``: analyses and rewrites over FX graphs."""

from . import shape_prop  # noqa: F401
