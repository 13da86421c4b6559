"""ember.profiler and ember.autograd.profiler against torch.profiler on the same programs.

Times differ between the two libraries by nature; what must agree is which events are
recorded (names, counts, nesting), the schedule's step semantics, the table's layout, the
trace file's structure, and the FLOP and memory counts of the ops whose kernels coincide.
"""

import collections
import gzip
import json
import os
import re
import socket
import threading
import warnings

import pytest
import torch
import torch.autograd.profiler as torch_autograd_profiler
import torch.profiler as torch_profiler
from torch.autograd import profiler_util as torch_profiler_util

import ember
import ember.autograd.profiler as ember_autograd_profiler
import ember.profiler as ember_profiler
from ember.profiler import _events, _recorder

# ops whose decomposition is the same in both libraries: one event each, by torch's name
SHARED_OPS = {"aten::add", "aten::mul", "aten::mm", "aten::relu", "aten::sum"}
EVALUATE = "autograd::engine::evaluate_function: "


def small_program(lib, a, b):
    """add, mul, mm, relu, sum, then backward, inside one labelled range."""
    with lib.profiler.record_function("block"):
        c = a + b
        d = c * b
        e = lib.mm(d, b)
        f = lib.relu(e)
        s = f.sum()
    s.backward()


def inputs(lib):
    a = lib.ones(4, 4) * 0.5
    b = lib.ones(4, 4) * 0.25
    return a.requires_grad_(), b


def profile_both(program, **options):
    """Run ``program(lib, *inputs(lib))`` under each library's profiler."""
    results = {}
    for lib in (torch, ember):
        args = inputs(lib)
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  **options) as prof:
            program(lib, *args)
        results[lib.__name__] = prof
    return results["torch"], results["ember"]


def under(event, name):
    """Whether ``event`` lies (transitively) inside an event named ``name``."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == name or parent.name.startswith(name):
            return True
        parent = parent.cpu_parent
    return False


def forward_op_counts(events):
    """Counts of the shared ops called directly inside the ``block`` range."""
    return collections.Counter(e.name for e in events if e.name in SHARED_OPS
                               and e.cpu_parent is not None and e.cpu_parent.name == "block")


# ---------------------------------------------------------------- events and their names


def test_forward_op_events_match_torch():
    def program(lib, a, b):
        for _ in range(3):
            small_program(lib, a, b)

    torch_prof, ember_prof = profile_both(program)
    expected = forward_op_counts(torch_prof.events())
    assert expected == {name: 3 for name in SHARED_OPS}
    assert forward_op_counts(ember_prof.events()) == expected


def test_backward_node_events_match_torch():
    torch_prof, ember_prof = profile_both(small_program)

    def node_events(events):
        outer = collections.Counter(e.name for e in events if e.name.startswith(EVALUATE))
        inner = collections.Counter(e.name for e in events if e.cpu_parent is not None
                                    and e.cpu_parent.name == EVALUATE + e.name)
        return outer, inner

    expected = node_events(torch_prof.events())
    assert "autograd::engine::evaluate_function: AddBackward0" in expected[0]
    assert node_events(ember_prof.events()) == expected

    def muls_in_mul_backward(events):
        return sum(1 for e in events if e.name == "aten::mul"
                   and e.cpu_parent is not None and e.cpu_parent.name == "MulBackward0")

    assert muls_in_mul_backward(ember_prof.events()) == \
        muls_in_mul_backward(torch_prof.events()) == 1


def test_backward_events_are_not_children_of_forward_ranges():
    _, ember_prof = profile_both(small_program)
    for event in ember_prof.events():
        if event.name.startswith(EVALUATE):
            assert event.cpu_parent is None
        if event.name in SHARED_OPS and not under(event, "block"):
            assert under(event, EVALUATE)  # ops run by the derivatives


def test_forward_and_backward_events_share_sequence_numbers():
    _, ember_prof = profile_both(small_program)
    events = ember_prof.events()
    forward = {e.sequence_nr: e.name for e in events if e.cpu_parent is not None
               and e.cpu_parent.name == "block"}
    backward = {e.sequence_nr: e.name[len(EVALUATE):] for e in events
                if e.name.startswith(EVALUATE) and e.sequence_nr >= 0}
    pairs = {forward[seq]: node for seq, node in backward.items()}
    assert pairs == {"aten::add": "AddBackward0", "aten::mul": "MulBackward0",
                     "aten::mm": "MmBackward0", "aten::relu": "ReluBackward0",
                     "aten::sum": "SumBackward0"}


def test_input_shapes_of_tensor_arguments():
    def program(lib, a, b):
        lib.mm(a, lib.ones(4, 2))
        a + b

    torch_prof, ember_prof = profile_both(program, record_shapes=True)

    def shapes(prof, name):
        return next(e.input_shapes for e in prof.events() if e.name == name)

    assert shapes(ember_prof, "aten::mm") == shapes(torch_prof, "aten::mm") == [[4, 4], [4, 2]]
    # torch lists the scalar alpha as [] too; ember lists the tensor arguments only
    assert shapes(ember_prof, "aten::add") == shapes(torch_prof, "aten::add")[:2]


def test_nothing_is_shape_recorded_without_record_shapes():
    _, ember_prof = profile_both(small_program)
    assert all(e.input_shapes == [] for e in ember_prof.events())


# ---------------------------------------------------------------- nesting and self time


def test_record_function_nesting_and_self_time():
    @ember.profiler.record_function("decorated")
    def decorated(x):
        return x * 2

    x = ember.ones(3)
    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("outer"):
            x + 1
            with ember.autograd.profiler.record_function("inner"):
                decorated(x)
                x - 1
    events = {e.name: e for e in prof.events()}
    assert [e.name for e in prof.events()] == ["outer", "aten::add", "inner", "decorated",
                                              "aten::mul", "aten::sub"]
    assert [c.name for c in events["outer"].cpu_children] == ["aten::add", "inner"]
    assert [c.name for c in events["inner"].cpu_children] == ["decorated", "aten::sub"]
    assert events["aten::mul"].cpu_parent is events["decorated"]
    assert events["outer"].cpu_parent is None
    for event in prof.events():
        children = sum(c.cpu_time_total for c in event.cpu_children)
        assert event.self_cpu_time_total == pytest.approx(event.cpu_time_total - children)
        start, end = event.time_range.start, event.time_range.end
        for child in event.cpu_children:
            assert start <= child.time_range.start <= child.time_range.end <= end
    assert events["outer"].is_user_annotation and not events["aten::add"].is_user_annotation


def test_recursive_decorated_function_nests():
    @ember.profiler.record_function("fact")
    def fact(n):
        return ember.ones(1) if n == 0 else fact(n - 1) * n

    with ember.profiler.profile() as prof:
        fact(2)
    depths = [depth(e) for e in prof.events() if e.name == "fact"]
    assert depths == [0, 1, 2]


def depth(event):
    """How many events enclose ``event``."""
    return 0 if event.cpu_parent is None else 1 + depth(event.cpu_parent)


def test_record_function_names_must_be_strings():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="Expected a value of type 'str' for argument "
                                               "'name' but instead found type 'int'"):
            with lib.profiler.record_function(3):
                pass


def test_events_on_other_threads_are_recorded_apart():
    with ember.profiler.profile() as prof:
        worker = threading.Thread(target=lambda: ember.ones(2) * 3)
        with ember.profiler.record_function("main"):
            worker.start()
            worker.join()
            ember.ones(2) + 1
    events = {e.name: e for e in prof.events()}
    assert events["aten::mul"].thread != events["aten::add"].thread
    assert events["aten::mul"].cpu_parent is None
    assert events["aten::add"].cpu_parent is events["main"]


def test_an_op_that_raises_leaves_the_profiler_consistent():
    with ember.profiler.profile() as prof:
        with pytest.raises(RuntimeError):
            ember.tensor([1]) // ember.tensor([0])
        ember.ones(2) * 2
    names = [e.name for e in prof.events()]
    assert names.count("aten::mul") == 1
    assert _recorder.state.recorder is None


# ---------------------------------------------------------------- off means off


def test_profiler_off_records_nothing():
    assert _recorder.state.recorder is None
    x = ember.ones(3, requires_grad=True)
    with ember.profiler.record_function("unprofiled"):
        (x * 2).sum().backward()
    with ember.profiler.profile() as prof:
        ember.ones(2) + 1
    assert [e.name for e in prof.events()] == ["aten::add"]
    assert _recorder.state.recorder is None
    (x * 2).sum().backward()
    assert [e.name for e in prof.events()] == ["aten::add"]


# ---------------------------------------------------------------- schedules


SCHEDULES = [
    dict(wait=1, warmup=1, active=2),
    dict(wait=1, warmup=1, active=2, repeat=1),
    dict(wait=0, warmup=1, active=1, repeat=2, skip_first=1),
    dict(wait=2, warmup=2, active=3, repeat=3, skip_first=2),
    dict(wait=3, warmup=1, active=1, skip_first=4, skip_first_wait=1),
    dict(wait=0, warmup=0, active=1),
    dict(wait=1, warmup=0, active=3, repeat=2),
]


@pytest.mark.parametrize("params", SCHEDULES, ids=str)
def test_schedule_actions_match_torch(params):
    with warnings.catch_warnings(record=True) as torch_warnings:
        warnings.simplefilter("always")
        expected = torch.profiler.schedule(**params)
    with warnings.catch_warnings(record=True) as ember_warnings:
        warnings.simplefilter("always")
        actual = ember.profiler.schedule(**params)
    assert [str(w.message) for w in ember_warnings] == [str(w.message) for w in torch_warnings]
    assert [actual(i).name for i in range(40)] == [expected(i).name for i in range(40)]


@pytest.mark.parametrize("params", [dict(wait=-1, warmup=1, active=1),
                                    dict(wait=0, warmup=1, active=0),
                                    dict(wait=0, warmup=1, active=1, repeat=-1)], ids=str)
def test_schedule_refuses_what_torch_refuses(params):
    with pytest.raises(AssertionError) as expected:
        torch.profiler.schedule(**params)
    with pytest.raises(AssertionError) as actual:
        ember.profiler.schedule(**params)
    assert str(actual.value) == str(expected.value)


def run_steps(lib, steps, **options):
    """A training-like loop: one add per step; returns what each on_trace_ready saw."""
    seen = []

    def handler(prof):
        names = [e.name for e in prof.events()]
        steps = [e.trace_name for e in prof.events() if e.name == "ProfilerStep*"]
        seen.append((prof.step_num, steps, names.count("aten::add")))

    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  on_trace_ready=handler, **options) as prof:
            for _ in range(steps):
                x + 1
                prof.step()
    return seen


@pytest.mark.parametrize("params", SCHEDULES[:5], ids=str)
def test_stepping_records_the_steps_torch_records(params):
    def run(lib):
        return run_steps(lib, 12, schedule=lib.profiler.schedule(**params))

    expected = run(torch)
    assert expected  # every schedule here completes at least one cycle
    assert run(ember) == expected


def test_without_schedule_the_trace_is_ready_once_at_exit():
    expected = run_steps(torch, 3)
    assert run_steps(ember, 3) == expected == [(3, [], 3)]


def test_warmup_steps_record_nothing():
    seen = run_steps(ember, 4, schedule=ember.profiler.schedule(wait=1, warmup=2, active=1))
    assert seen == [(4, ["ProfilerStep#3"], 1)]  # ready when step() leaves step 3


def test_acc_events_keeps_every_cycle():
    def run(lib):
        return run_steps(lib, 6, schedule=lib.profiler.schedule(wait=0, warmup=1, active=1),
                         acc_events=True)

    assert run(ember) == run(torch)


# ---------------------------------------------------------------- tables


def header_titles(table):
    """The column titles of a profiler table (second line, columns split by 2+ spaces)."""
    return re.split(r"\s{2,}", table.splitlines()[1].strip())


@pytest.mark.parametrize("options, group", [
    (dict(), False),
    (dict(record_shapes=True), True),
    (dict(profile_memory=True), False),
    (dict(with_flops=True), False),
    (dict(record_shapes=True, profile_memory=True, with_flops=True), True),
])
def test_table_columns_match_torch(options, group):
    torch_prof, ember_prof = profile_both(small_program, **options)
    expected = torch_prof.key_averages(group_by_input_shape=group).table()
    actual = ember_prof.key_averages(group_by_input_shape=group).table()
    assert header_titles(actual) == header_titles(expected)
    assert actual.splitlines()[0] == actual.splitlines()[2] == actual.splitlines()[-2]
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", actual.splitlines()[-1])
    # the name column has torch's width: the longest name + 4, at most 55
    assert len(actual.splitlines()[0].split()[0]) == len(expected.splitlines()[0].split()[0])


def test_table_rows_sorted_and_limited():
    _, ember_prof = profile_both(small_program)
    averages = ember_prof.key_averages()
    table = averages.table(sort_by="self_cpu_time_total", row_limit=4)
    rows = table.splitlines()[3:-2]
    assert len(rows) == 4
    ranked = sorted(averages, key=lambda a: a.self_cpu_time_total, reverse=True)[:4]
    # the name column's width is its rule's: names are right-aligned and may hold a space
    # ("autograd::engine::evaluate_function: SumBackward0" ranks here when the machine is busy)
    width = len(table.splitlines()[0].split()[0])
    assert [r[:width].strip() for r in rows] == \
        [a.key[:52] + "..." if len(a.key) >= 52 else a.key for a in ranked]
    with pytest.raises(AttributeError):
        averages.table(sort_by="no_such_column")
    full = averages.table(row_limit=-1)
    assert len(full.splitlines()) == len(averages) + 5


def test_table_cells_use_torchs_formats():
    for us in (0.0, 0.5, 999.9994, 999.9996, 1234.5, 2.5e6):
        assert _events._format_time(us) == torch_profiler_util._format_time(us)
    for nbytes in (0, 64, 1023, 1024, 5000, 3 << 20, -2048, 5 << 30):
        assert _events._format_memory(nbytes) == torch_profiler_util._format_memory(nbytes)
    for share in ((1.0, 3.0), (0.0, 0.0)):
        assert _events._format_time_share(*share) == \
            torch_profiler_util._format_time_share(*share)


def test_key_averages_counts_and_grouping_match_torch():
    def program(lib, a, b):
        a + b
        a + b
        lib.ones(2, 3) + lib.ones(2, 3)
        a * b

    torch_prof, ember_prof = profile_both(program, record_shapes=True)

    def counts(prof, group):
        return sorted((a.key, str(a.input_shapes[:2]), a.count)
                      for a in prof.key_averages(group_by_input_shape=group)
                      if a.key in SHARED_OPS)

    for group in (False, True):
        assert counts(ember_prof, group) == counts(torch_prof, group)
    add = next(a for a in ember_prof.key_averages() if a.key == "aten::add")
    assert add.cpu_time == pytest.approx(add.cpu_time_total / 3)


def test_flops_and_memory_of_shared_ops_match_torch():
    def program(lib, a, b):
        lib.mm(a, lib.ones(4, 6))
        a + b
        a * b

    torch_prof, ember_prof = profile_both(program, profile_memory=True, with_flops=True)

    def stats(prof):
        return {a.key: (a.flops, a.cpu_memory_usage, a.self_cpu_memory_usage)
                for a in prof.key_averages() if a.key in ("aten::mm", "aten::add", "aten::mul")}

    assert stats(ember_prof) == stats(torch_prof)
    assert stats(ember_prof)["aten::mm"] == (2 * 4 * 4 * 6, 4 * 6 * 4, 4 * 6 * 4)


def test_total_average_and_self_cpu_time_total():
    _, ember_prof = profile_both(small_program)
    events = ember_prof.events()
    total = events.total_average()
    assert total.key == "Total" and total.count == len(events)
    assert total.self_cpu_time_total == pytest.approx(events.self_cpu_time_total)
    # self times partition the busy time of the top-level events
    top = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    assert events.self_cpu_time_total == pytest.approx(top)


# ---------------------------------------------------------------- traces


def check_chrome_trace(trace, names):
    assert isinstance(trace["traceEvents"], list)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert names <= {e["name"] for e in complete}
    for e in complete:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        assert {"pid", "tid", "cat", "args"} <= e.keys()
    return complete


def test_chrome_trace_is_json_with_complete_events(tmp_path):
    torch_prof, ember_prof = profile_both(small_program, record_shapes=True)
    torch_prof.export_chrome_trace(str(tmp_path / "torch.json"))
    ember_prof.export_chrome_trace(str(tmp_path / "ember.json"))
    names = {"block", "aten::mm", EVALUATE + "MmBackward0"}
    expected = json.loads((tmp_path / "torch.json").read_text())
    actual = json.loads((tmp_path / "ember.json").read_text())
    check_chrome_trace(expected, names)
    complete = check_chrome_trace(actual, names)
    assert actual.keys() >= {"schemaVersion", "traceEvents", "traceName"}
    assert len(complete) == len(ember_prof.events())
    categories = {e["name"]: e["cat"] for e in complete}
    assert categories["block"] == "user_annotation" and categories["aten::mm"] == "cpu_op"
    mm = next(e for e in complete if e["name"] == "aten::mm")
    torch_mm = next(e for e in expected["traceEvents"] if e.get("name") == "aten::mm")
    assert mm["args"]["Input Dims"] == torch_mm["args"]["Input Dims"]
    block = next(e for e in complete if e["name"] == "block")
    assert block["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= block["ts"] + block["dur"]


def test_chrome_trace_gzip(tmp_path):
    with ember.profiler.profile() as prof:
        ember.ones(2) + 1
    path = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(path))
    with gzip.open(path, "rt") as f:
        check_chrome_trace(json.load(f), {"aten::add"})


def test_tensorboard_trace_handler_names_files_as_torch(tmp_path):
    def trace_files(lib, worker_name, use_gzip):
        folder = tmp_path / lib.__name__ / str(use_gzip) / str(worker_name)
        handler = lib.profiler.tensorboard_trace_handler(str(folder), worker_name, use_gzip)
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  schedule=lib.profiler.schedule(wait=0, warmup=1, active=1),
                                  on_trace_ready=handler) as prof:
            for _ in range(4):
                lib.ones(2) + 1
                prof.step()
        return sorted(os.listdir(folder)), folder

    for worker_name in (None, "worker0"):
        for use_gzip in (False, True):
            expected, _ = trace_files(torch, worker_name, use_gzip)
            actual, folder = trace_files(ember, worker_name, use_gzip)
            assert [re.sub(r"\.\d+\.", ".N.", f) for f in actual] == \
                [re.sub(r"\.\d+\.", ".N.", f) for f in expected]
            assert len(actual) == 2  # two cycles in four steps
            worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
            suffix = r"\.gz" if use_gzip else ""
            assert all(re.fullmatch(re.escape(worker) + r"\.\d+\.pt\.trace\.json" + suffix, f)
                       for f in actual)
    with gzip.open(folder / actual[0], "rt") as f:
        check_chrome_trace(json.load(f), {"aten::add", "ProfilerStep#1"})


def test_with_stack_points_at_the_caller(tmp_path):
    with ember.profiler.profile(with_stack=True) as prof:
        ember.ones(2) + 1
    add = next(e for e in prof.events() if e.name == "aten::add")
    assert add.stack[0].startswith(__file__) and add.stack[0].endswith(
        "test_with_stack_points_at_the_caller")
    table = prof.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in header_titles(table)
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines and all(re.fullmatch(r"\S+ \d+", line) for line in lines)
    with pytest.raises(ValueError):
        prof.export_stacks(str(path), "cpu_time")


# ---------------------------------------------------------------- errors and the legacy API


def test_results_before_profiling_raise_as_torch():
    for lib in (torch, ember):
        prof = lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU])
        with pytest.raises(AssertionError, match="Profiler must be initialized"):
            prof.key_averages()
        with pytest.raises(AssertionError, match="Profiler must be initialized"):
            prof.events()


def test_autograd_profiler_profile():
    def run(lib):
        a, b = inputs(lib)
        with lib.autograd.profiler.profile(record_shapes=True) as prof:
            small_program(lib, a, b)
        return prof

    expected, actual = run(torch), run(ember)
    assert forward_op_counts(actual.function_events) == \
        forward_op_counts(expected.function_events)
    assert isinstance(actual.function_events, ember_autograd_profiler.EventList)
    assert actual.self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in actual.function_events))
    assert header_titles(actual.key_averages(group_by_input_shape=True).table()) == \
        header_titles(expected.key_averages(group_by_input_shape=True).table())
    assert str(actual) == actual.function_events.table()


def test_autograd_profiler_misuse_raises_as_torch():
    for lib in (torch_autograd_profiler, ember_autograd_profiler):
        prof = lib.profile()
        assert prof.key_averages() == [] and prof.table() == ""  # nothing before the run
        with prof:
            with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
                prof.__enter__()


def test_deprecated_use_cuda_warns_as_torch():
    def categories(make):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            make()
        return [(w.category, str(w.message)) for w in caught]

    assert categories(lambda: ember_autograd_profiler.profile(use_cuda=True)) == \
        categories(lambda: torch_autograd_profiler.profile(use_cuda=True))
    expected = categories(lambda: torch_profiler.profile(use_cuda=False))
    assert categories(lambda: ember_profiler.profile(use_cuda=False)) == expected


def test_disabled_autograd_profiler_records_nothing():
    with ember.autograd.profiler.profile(enabled=False):
        assert _recorder.state.recorder is None
        ember.ones(2) + 1


def test_public_names_match_torch():
    torch_names = set(torch.profiler.__all__) - {"kineto_available", "ExecutionTraceObserver"}
    assert torch_names <= set(ember.profiler.__all__)
    assert [a.name for a in ember.profiler.ProfilerAction] == \
        [a.name for a in torch.profiler.ProfilerAction if a.name != "DEVICE_STOPPED"]
    assert {"CPU", "CUDA"} <= set(ember.profiler.ProfilerActivity.__members__)
    assert ember.profiler.ProfilerActivity.CPU in ember.profiler.supported_activities()


def test_results_while_the_first_trace_runs_are_empty_as_torch():
    for lib in (torch, ember):
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU]) as prof:
            lib.ones(2) + 1
            assert list(prof.events()) == [] and list(prof.key_averages()) == []
        assert "aten::add" in [e.name for e in prof.events()]


def test_a_range_counts_the_memory_of_everything_inside_it():
    torch_prof, ember_prof = profile_both(small_program, profile_memory=True)

    def block(prof):
        event = next(e for e in prof.events() if e.name == "block")
        return event.cpu_memory_usage, event.self_cpu_memory_usage

    assert block(ember_prof) == block(torch_prof) == (4 * 64 + 4, 0)  # 4 results of 4x4, a sum


def test_convolution_event_matches_torchs_inner_convolution():
    def program(lib, a, b):
        lib.nn.functional.conv2d(lib.ones(1, 2, 5, 5), lib.ones(3, 2, 3, 3))

    torch_prof, ember_prof = profile_both(program, record_shapes=True, with_flops=True)

    def convolution(prof):
        events = [e for e in prof.events() if e.name == "aten::convolution"]
        return len(events), events[0].input_shapes[:2]

    assert convolution(ember_prof) == convolution(torch_prof)
    torch_flops = next(e.flops for e in torch_prof.events() if e.name == "aten::conv2d")
    assert next(e.flops for e in ember_prof.events() if e.name == "aten::convolution") == \
        torch_flops == 2 * (3 * 3 * 3) * (2 * 3 * 3)


def test_traced_modules_record_the_ops_they_run():
    model = ember.nn.Linear(4, 2)
    traced = ember.jit.trace(model, ember.ones(3, 4))
    names = []
    for fn in (model, traced):
        with ember.profiler.profile() as prof:
            fn(ember.ones(3, 4))
        names.append([e.name for e in prof.events()])
    # eager runs one linear op (torch's aten::linear); a trace records the composite ops
    assert names[0] == ["aten::linear"]
    assert names[1] == [f"aten::{n.op.name}" for n in traced.graph.op_nodes()]
    assert "aten::mm" in names[1]


def test_nested_profilers_each_see_their_own_span():
    with ember.profiler.profile() as outer:
        ember.ones(2) * 2
        with ember.profiler.profile() as inner:
            ember.ones(2) + 1
        ember.ones(2) - 1
    assert [e.name for e in inner.events()] == ["aten::add"]
    assert [e.name for e in outer.events()] == ["aten::mul", "aten::add", "aten::sub"]
    assert _recorder.state.recorder is None


def test_metadata_goes_into_the_trace_as_torch(tmp_path):
    traces = []
    for lib in (torch, ember):
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU]) as prof:
            lib.ones(2) + 1
            prof.add_metadata("run", "baseline")  # torch keeps what is added while running
            prof.add_metadata_json("config", '{"lr": 0.1}')
        path = tmp_path / f"{lib.__name__}.json"
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        traces.append((trace["run"], trace["config"]))
    assert traces[1] == traces[0]
