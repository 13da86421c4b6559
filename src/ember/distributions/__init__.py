"""``ember.distributions``: probability distributions with torch.distributions' API.

Distributions have ``batch_shape``/``event_shape``, ``sample``/``rsample`` (reparameterised,
differentiable), ``log_prob``, ``cdf``/``icdf``, ``entropy``, moments, ``expand`` and argument
validation with torch's messages; :func:`kl_divergence` dispatches on the pair of types.

Sampling draws the same primitive torch draws (``normal_``, ``uniform_``, ``exponential_``,
``cauchy_``, ``bernoulli``, ``multinomial``, ``poisson``) in the same order, so after the same
``manual_seed`` ember's samples equal torch's for Normal, Uniform, Exponential, Laplace, Cauchy,
LogNormal, Gumbel, Bernoulli, Geometric, Categorical, OneHotCategorical, Poisson,
MultivariateNormal, Independent and MixtureSameFamily. Gamma, Beta, Dirichlet and Binomial use
ember's own samplers (torch's are its own too): reproducible, but not torch's numbers.

Example::

    >>> import ember
    >>> from ember.distributions import Normal, kl_divergence
    >>> p = Normal(ember.tensor(0.0), ember.tensor(1.0))
    >>> p.log_prob(ember.tensor(0.0))
    tensor(-0.9189)
    >>> kl_divergence(p, Normal(1.0, 1.0))
    tensor(0.5000)
"""

from . import constraints, transforms
from .constraints import Constraint
from .continuous import Beta, Cauchy, Dirichlet, Exponential, Gamma, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .transformed_distribution import Gumbel, LogNormal, TransformedDistribution
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy",
           "ComposeTransform", "Constraint", "Dirichlet", "Distribution", "ExpTransform",
           "Exponential", "Gamma", "Geometric", "Gumbel", "Independent", "Laplace",
           "LogNormal", "MixtureSameFamily", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Poisson", "SigmoidTransform", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "constraints", "kl_divergence",
           "register_kl", "transforms"]
