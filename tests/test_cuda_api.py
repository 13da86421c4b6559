"""ember.cuda's API against torch's CPU build: without a GPU, each function answers as torch
does or raises torch's exception type (ember's errors are also RuntimeErrors naming CuPy)."""

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="checks the behaviour without GPU")

_STATE = [0] * 5


def _calls(module):
    """(name, call) for every function compared; ``module`` is torch or ember."""
    return [
        ("current_device", lambda: module.cuda.current_device()),
        ("set_device", lambda: module.cuda.set_device(0)),
        ("synchronize", lambda: module.cuda.synchronize()),
        ("initial_seed", lambda: module.cuda.initial_seed()),
        ("get_rng_state", lambda: module.cuda.get_rng_state()),
        ("get_device_name", lambda: module.cuda.get_device_name()),
        ("get_device_capability", lambda: module.cuda.get_device_capability()),
        ("get_device_properties", lambda: module.cuda.get_device_properties(0)),
        ("init", lambda: module.cuda.init()),
        ("reset_peak_memory_stats", lambda: module.cuda.reset_peak_memory_stats()),
        ("reset_max_memory_allocated", lambda: module.cuda.reset_max_memory_allocated()),
        ("reset_max_memory_cached", lambda: module.cuda.reset_max_memory_cached()),
        ("memory_summary", lambda: module.cuda.memory_summary()),
        ("mem_get_info", lambda: module.cuda.mem_get_info()),
        ("set_per_process_memory_fraction",
         lambda: module.cuda.set_per_process_memory_fraction(0.5)),
        ("get_per_process_memory_fraction",
         lambda: module.cuda.get_per_process_memory_fraction()),
        ("ipc_collect", lambda: module.cuda.ipc_collect()),
        ("current_stream", lambda: module.cuda.current_stream()),
        ("default_stream", lambda: module.cuda.default_stream()),
        ("Stream", lambda: module.cuda.Stream()),
        ("Event", lambda: module.cuda.Event()),
        ("ExternalStream", lambda: module.cuda.ExternalStream(0)),
        ("device(0)", lambda: module.cuda.device(0).__enter__()),
        ("FloatTensor", lambda: module.cuda.FloatTensor(3)),
        ("LongTensor", lambda: module.cuda.LongTensor([1])),
        ("nvtx.range_push", lambda: module.cuda.nvtx.range_push("a")),
        ("nvtx.range_pop", lambda: module.cuda.nvtx.range_pop()),
        ("nvtx.mark", lambda: module.cuda.nvtx.mark("a")),
        ("nvtx.range", lambda: module.cuda.nvtx.range("a").__enter__()),
    ]


def _outcome(call):
    """('ok', result) or ('raise', the exception)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", call()
        except Exception as error:  # noqa: BLE001 - the type is what is compared
            return "raise", error


_NAMES = [name for name, _ in _calls(torch)]


@no_gpu
@pytest.mark.parametrize("index", range(len(_NAMES)), ids=_NAMES)
def test_refusals_without_gpu_have_torch_type(index):
    name, torch_call = _calls(torch)[index]
    _, ember_call = _calls(ember)[index]
    torch_kind, torch_error = _outcome(torch_call)
    ember_kind, ember_error = _outcome(ember_call)
    assert torch_kind == ember_kind == "raise", (name, torch_kind, ember_kind)
    assert isinstance(ember_error, type(torch_error)), (name, torch_error, ember_error)
    # and each names what is missing
    assert "CuPy" in str(ember_error), (name, ember_error)


@no_gpu
@pytest.mark.parametrize("name", ["is_available", "device_count", "is_initialized",
                                  "is_bf16_supported", "memory_allocated",
                                  "max_memory_allocated", "memory_reserved",
                                  "max_memory_reserved", "memory_cached", "max_memory_cached",
                                  "memory_stats", "empty_cache", "get_arch_list",
                                  "get_gencode_flags", "get_rng_state_all", "seed", "seed_all"])
def test_queries_without_gpu_match_torch(name):
    torch_kind, torch_value = _outcome(getattr(torch.cuda, name))
    ember_kind, ember_value = _outcome(getattr(ember.cuda, name))
    assert torch_kind == ember_kind == "ok"
    assert type(ember_value) is type(torch_value) and ember_value == torch_value


@no_gpu
def test_lazy_calls_without_gpu_return_none_as_torch():
    pairs = [
        (lambda m: m.cuda.manual_seed(3)), (lambda m: m.cuda.manual_seed_all(3)),
        (lambda m: m.cuda.set_rng_state(m.zeros(5, dtype=m.uint8))),
        (lambda m: m.cuda.set_rng_state_all([])), (lambda m: m.cuda.set_stream(None)),
    ]
    for call in pairs:
        assert call(torch) is None and call(ember) is None


@no_gpu
def test_do_nothing_contexts_without_gpu_as_torch():
    for module in (torch, ember):
        with module.cuda.stream(None), module.cuda.StreamContext(None):
            pass
        with module.cuda.device(-1), module.cuda.device_of(module.zeros(1)):
            pass


def test_deprecated_memory_names_warn_as_torch():
    for name in ("memory_cached", "max_memory_cached", "reset_max_memory_allocated",
                 "reset_max_memory_cached"):
        messages = []
        for module in (torch, ember):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _outcome(getattr(module.cuda, name))
            messages.append([(w.category, str(w.message).replace("torch", "")) for w in caught])
        assert messages[0] == messages[1], name


def test_out_of_memory_error_is_a_runtime_error_as_torch():
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(ember.cuda.OutOfMemoryError, RuntimeError)
    assert ember.OutOfMemoryError is ember.cuda.OutOfMemoryError


def test_legacy_cuda_types_answer_isinstance_as_torch():
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor", "HalfTensor"):
        torch_type, ember_type = getattr(torch.cuda, name), getattr(ember.cuda, name)
        assert ember_type.dtype == getattr(ember, str(torch_type.dtype).split(".")[1])
        assert isinstance(torch.zeros(1, dtype=torch_type.dtype), torch_type) is \
            isinstance(ember.zeros(1, dtype=ember_type.dtype), ember_type) is False


def test_set_per_process_memory_fraction_checks_its_argument_before_the_gpu_in_order():
    # torch's CPU build refuses before looking at the fraction; ember does the same
    for module in (torch, ember):
        with pytest.raises(AssertionError):
            module.cuda.set_per_process_memory_fraction(2.0)


def test_cuda_amp_aliases_warn_future_warning_as_torch():
    for module in (torch, ember):
        with pytest.warns(FutureWarning, match="torch.amp.GradScaler"):
            module.cuda.amp.GradScaler(enabled=False)
        with pytest.warns(FutureWarning, match="torch.amp.autocast"):
            module.cuda.amp.autocast(enabled=False)


def test_every_compared_function_exists_in_both():
    for name in ember.cuda.__all__:
        assert hasattr(torch.cuda, name), name
    for name in ("Stream", "Event", "ExternalStream", "StreamContext", "nvtx", "amp",
                 "OutOfMemoryError", "memory_stats", "memory_summary"):
        assert hasattr(ember.cuda, name), name


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a GPU")
def test_streams_events_and_memory_stats_on_gpu():
    x = ember.ones(256, 256, device="cuda")
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    s.wait_stream(ember.cuda.current_stream())
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start.record()
        y = x @ x
        end.record()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    end.synchronize()
    assert end.query() and s.query() and start.elapsed_time(end) >= 0
    assert float(y[0, 0]) == 256.0
    ember.cuda.reset_peak_memory_stats()
    before = ember.cuda.memory_allocated()
    big = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() >= before + (4 << 20)
    del big
    assert ember.cuda.max_memory_allocated() >= before + (4 << 20)
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.peak"] >= 4 << 20
    assert "Allocated memory" in ember.cuda.memory_summary()
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total
    state = ember.cuda.get_rng_state()
    a = ember.rand(3, device="cuda")
    ember.cuda.set_rng_state(state)
    assert bool((ember.rand(3, device="cuda") == a).all())
    assert isinstance(ember.cuda.FloatTensor(2), ember.cuda.FloatTensor)
