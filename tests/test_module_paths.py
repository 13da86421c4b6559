"""Every torch module path listed here exists in ember with torch's public names.

The names are read from torch at test time (its ``__all__``, else its public attributes
defined in torch), so the test follows the installed torch. Known, documented omissions are
listed in ``MISSING`` with a reason.
"""

import importlib
import types

import pytest
import torch  # noqa: F401  (the oracle)

import ember  # noqa: F401

PATHS = [
    # distributions: one module per family
    *(f"torch.distributions.{name}" for name in (
        "bernoulli", "beta", "binomial", "categorical", "cauchy", "chi2", "dirichlet",
        "exponential", "fishersnedecor", "gamma", "geometric", "gumbel", "half_cauchy",
        "half_normal", "inverse_gamma", "kumaraswamy", "laplace", "lkj_cholesky", "log_normal",
        "logistic_normal", "mixture_same_family", "multinomial", "negative_binomial", "normal",
        "one_hot_categorical", "pareto", "poisson", "relaxed_bernoulli", "relaxed_categorical",
        "studentT", "uniform", "weibull", "wishart")),
    # nn
    "torch.nn", "torch.nn.functional", "torch.nn.modules", "torch.nn.modules.batchnorm",
    "torch.nn.modules.instancenorm", "torch.nn.modules.channelshuffle", "torch.nn.modules.utils",
    "torch.nn.modules.linear_cross_entropy", "torch.nn.modules.linear_cross_entropy_options",
    "torch.nn.modules.conv", "torch.nn.modules.container", "torch.nn.modules.module",
    "torch.nn.modules.normalization", "torch.nn.modules.pooling", "torch.nn.modules.loss",
    "torch.nn.modules.linear", "torch.nn.parameter", "torch.nn.utils.spectral_norm",
    "torch.nn.utils.prune", "torch.nn.grad", "torch.nn.common_types", "torch.nn.attention",
    "torch.nn.attention.bias", "torch.nn.attention.flex_attention",
    "torch.nn.attention.varlen", "torch.nn.parallel", "torch.nn.parallel.comm",
    "torch.nn.parallel.data_parallel", "torch.nn.parallel.parallel_apply",
    "torch.nn.parallel.replicate", "torch.nn.parallel.scatter_gather", "torch.nn.backends",
    "torch.nn.cpp", "torch.nn.modules.rnn", "torch.nn.modules.activation",
    # modules split into several files in ember (the public path keeps every name)
    "torch.distributed.distributed_c10d", "torch.serialization",
    # optim
    "torch.optim", *(f"torch.optim.{name}" for name in (
        "adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "nadam", "radam", "rmsprop",
        "rprop", "sgd", "sparse_adam", "lr_scheduler", "swa_utils")),
    # data
    "torch.utils.data", "torch.utils.data.distributed", "torch.utils.data.graph",
    "torch.utils.data.graph_settings", "torch.utils.data.backward_compatibility",
    "torch.utils.data.datapipes", "torch.utils.data.datapipes.datapipe",
    "torch.utils.data.datapipes.iter", "torch.utils.data.datapipes.map",
    "torch.utils.data.datapipes.utils.common", "torch.utils.data.datapipes.utils.decoder",
    "torch.utils.data.datapipes.dataframe",
    # autograd and friends
    "torch.autograd", "torch.autograd.function", "torch.autograd.grad_mode",
    "torch.autograd.graph", "torch.autograd.profiler", "torch.autograd.profiler_util",
    "torch.autograd.profiler_legacy", "torch.autograd.variable", "torch.utils.checkpoint",
    "torch.random", "torch.hub", "torch.futures", "torch.types",
    # jit, profiler, multiprocessing, cuda, backends, export
    "torch.jit.annotations", "torch.jit.quantized", "torch.jit.generate_bytecode",
    "torch.jit.unsupported_tensor_ops", "torch.profiler", "torch.profiler.itt",
    "torch.multiprocessing.pool", "torch.multiprocessing.queue",
    "torch.multiprocessing.reductions", "torch.multiprocessing.spawn",
    "torch.cuda.amp", "torch.cuda.amp.autocast_mode", "torch.cuda.amp.common",
    "torch.cuda.amp.grad_scaler", "torch.cuda.comm", "torch.cuda.gds", "torch.cuda.graphs",
    "torch.cuda.green_contexts", "torch.cuda.memory", "torch.cuda.nccl", "torch.cuda.nvtx",
    "torch.cuda.profiler", "torch.cuda.sparse", "torch.backends.cuda", "torch.backends.mkl",
    "torch.backends.mps", "torch.backends.nnpack", "torch.backends.cusparselt",
    "torch.backends.kleidiai", "torch.backends.mha", "torch.export",
    # nested, library, onnx, sparse, C++ extensions, distributed's smaller modules
    "torch.nested", "torch.library", "torch.onnx", "torch.onnx.ops", "torch.sparse",
    "torch.sparse.semi_structured", "torch.utils.cpp_extension",
    *(f"torch.distributed.{name}" for name in (
        "constants", "config", "rendezvous", "collective_utils", "remote_device", "run",
        "launcher", "launcher.api", "argparse_util", "elastic.multiprocessing.errors",
        "elastic.utils.logging", "pipelining", "pipelining.schedules", "pipelining.stage",
        "pipelining.microbatch", "algorithms.ddp_comm_hooks",
        "algorithms.ddp_comm_hooks.default_hooks", "debug")),
]

# names torch exposes by accident or that ember documents as absent
MISSING = {
    "torch.utils.data.datapipes": {"gen_pyi"},  # a build-time script module
    "torch.sparse": {"solve"},  # listed in torch's __all__, but torch defines no such name
}


def torch_public_names(module):
    names = getattr(module, "__all__", None)
    if names is not None:
        return {n for n in names if isinstance(n, str) and not n.startswith("_")}
    found = set()
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith("torch."):
                found.add(name)
            continue
        home = getattr(obj, "__module__", None) or ""
        if home.startswith("torch") or (home == "builtins" and callable(obj)) or (
                not callable(obj) and not isinstance(obj, type)):
            if home not in ("typing", "typing_extensions") and name != "annotations":
                found.add(name)
    return found


@pytest.mark.parametrize("path", PATHS)
def test_module_path_has_torchs_public_names(path):
    torch_module = importlib.import_module(path)
    ember_module = importlib.import_module("ember" + path[len("torch"):])
    missing = sorted(n for n in torch_public_names(torch_module) - MISSING.get(path, set())
                     if not hasattr(ember_module, n))
    assert missing == []


SUBMODULE_SHADOWING = r"""
import importlib, pkgutil, sys, types
import ember
rebound = []
for info in pkgutil.walk_packages(ember.__path__, "ember."):
    parent_name, _, child = info.name.rpartition(".")
    parent = sys.modules.get(parent_name)
    before = vars(parent).get(child) if parent is not None else None
    if before is None or isinstance(before, types.ModuleType) or info.name in sys.modules:
        continue
    try:
        importlib.import_module(info.name)
    except ImportError:
        continue  # (an optional dependency's module)
    if vars(parent).get(child) is not before:
        rebound.append(info.name)
print(rebound)
"""


def test_importing_a_submodule_keeps_the_package_attribute_of_that_name():
    # torch.nn.parallel.data_parallel is a function even after the module of that name is
    # imported (pickle imports it to find DataParallel); a fresh process imports every
    # submodule of ember and checks that no package attribute turned into a module
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", SUBMODULE_SHADOWING], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]"
