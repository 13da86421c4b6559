"""``ember.distributions``: probability distributions with torch.distributions' API.

Distributions have ``batch_shape``/``event_shape``, ``sample``/``rsample`` (reparameterised,
differentiable), ``log_prob``, ``cdf``/``icdf``, ``entropy``, moments, ``expand`` and argument
validation with torch's messages; :func:`kl_divergence` dispatches on the pair of types.

Sampling draws the same primitive torch draws (``normal_``, ``uniform_``, ``exponential_``,
``cauchy_``, ``bernoulli``, ``multinomial``, ``poisson``) in the same order, so after the same
``manual_seed`` ember's samples equal torch's for Normal, Uniform, Exponential, Laplace, Cauchy,
LogNormal, Gumbel, Bernoulli, Geometric, Categorical, OneHotCategorical(StraightThrough),
Poisson, MultivariateNormal, LowRankMultivariateNormal, Independent, MixtureSameFamily,
HalfNormal, HalfCauchy, Weibull, Pareto, Kumaraswamy, LogisticNormal, GeneralizedPareto,
ContinuousBernoulli, VonMises, RelaxedBernoulli, RelaxedOneHotCategorical and Multinomial.
Gamma, Beta, Dirichlet and Binomial use ember's own samplers (torch's are its own too):
reproducible, but not torch's numbers; so do the families built on them (Chi2, StudentT,
FisherSnedecor, InverseGamma, NegativeBinomial, Wishart, LKJCholesky).

:func:`biject_to` and :func:`transform_to` map each constraint to a transform onto it, with
torch's choices.

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
from .constraint_registry import biject_to, transform_to
from .constraints import Constraint
from .continuous import Beta, Cauchy, Dirichlet, Exponential, Gamma, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .count_families import Multinomial, NegativeBinomial
from .discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    Poisson,
)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma_families import Chi2, FisherSnedecor, StudentT
from .generalized_pareto import GeneralizedPareto
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .matrix_families import LKJCholesky, Wishart
from .multivariate_normal import MultivariateNormal
from .relaxed import RelaxedBernoulli, RelaxedOneHotCategorical
from .transformed_distribution import Gumbel, LogNormal, TransformedDistribution
from .transformed_families import (
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    Pareto,
    Weibull,
)
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .von_mises import VonMises

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
           "Categorical", "Cauchy", "Chi2", "ComposeTransform", "Constraint",
           "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "Dirichlet", "Distribution", "ExpTransform", "ExponentialFamily", "Exponential",
           "FisherSnedecor",
           "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
           "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
           "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
           "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform",
           "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
           "VonMises", "Weibull", "Wishart", "biject_to", "constraints", "identity_transform",
           "kl_divergence", "register_kl", "transform_to", "transforms"]


# torch defines each distribution in a module of its own (torch.distributions.normal); ember
# groups the families by kind (continuous.py, discrete.py...) and re-exports each class from a
# module at torch's path. The class names that module as its home, so a pickled distribution
# names torch's path (``ember.distributions.normal.Normal``, written by ``ember.save`` as
# ``torch.distributions.normal.Normal``) and loads in torch.
_TORCH_HOMES = ("bernoulli", "beta", "binomial", "categorical", "cauchy", "chi2", "dirichlet",
                "exponential", "fishersnedecor", "gamma", "geometric", "gumbel", "half_cauchy",
                "half_normal", "inverse_gamma", "kumaraswamy", "laplace", "lkj_cholesky",
                "log_normal", "logistic_normal", "mixture_same_family", "multinomial",
                "negative_binomial", "normal", "one_hot_categorical", "pareto", "poisson",
                "relaxed_bernoulli", "relaxed_categorical", "studentT", "uniform", "weibull",
                "wishart")


def _home_classes_at_torch_paths():
    import importlib

    for name in _TORCH_HOMES:
        home = importlib.import_module(f"{__name__}.{name}")
        for attribute in home.__all__:
            cls = getattr(home, attribute)
            if isinstance(cls, type):
                cls.__module__ = home.__name__


_home_classes_at_torch_paths()
