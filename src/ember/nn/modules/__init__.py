"""Every nn layer, one module per family; re-exported from ``ember.nn``."""

# torch's module paths that own classes ember defines elsewhere: imported so that those
# classes carry torch's __module__ (their pickled name) from the start
from . import batchnorm, channelshuffle, instancenorm  # noqa: F401
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .cross_map_lrn import *  # noqa: F403
from .data_parallel import DataParallel  # noqa: F401
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .fractional_pooling import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .linear_cross_entropy_options import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import Module  # noqa: F401
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .sync_batchnorm import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403
