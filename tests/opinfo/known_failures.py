"""The OpInfo checks that ember fails today, each with the reason.

Keys are (op id, check), with check one of "forward", "backward", "forward_ad", "vmap",
"jit", "onnx"; the op id
is the OpInfo's name plus its variant (``linalg.pinv.hermitian``). ``test_opinfo.py`` runs
each listed check over every sample and dtype as a strict xfail: fix the op, then delete
its entry. This list only shrinks.
"""

KNOWN_FAILURES = {
    ('as_strided_scatter', 'backward'):
        "torch's gradient for input is wrong: it keeps the incoming gradient at the "
        'scattered positions and zeroes the rest (flagged in review of '
        'pytorch/pytorch#77128); ember gives the exact gradient (zero at the scattered '
        'positions)',
    ('cholesky_inverse', 'forward_ad'):
        "torch's JVP is wrong: it computes -X dL X L^H + its adjoint instead of -X dL "
        'L^H X + its adjoint (off from finite differences by O(1) away from L = I; its '
        'reverse mode is right); ember keeps the exact tangent '
        '(tests/test_forward_ad.py)',
    ('logcumsumexp', 'forward_ad'):
        "torch's jvp divides by cumsum(exp(x - max)) + 1e-13, which moves tangents of terms "
        'far below the max beyond the tolerance (to 0 for wide ranges); ember keeps the '
        'exact tangent (tests/test_forward_ad.py)',
    ('matrix_exp', 'forward'):
        "float16/bfloat16: torch's kernel returns nan or garbage (-2.1e4 on the diagonal of "
        'exp of a small matrix), ember computes in float32; float32: ember takes torch\'s '
        'Taylor degrees and scaling, but 4 squarings of a (5, 5, 5) batch amplify matmul '
        'rounding (torch\'s small-bmm loop vs BLAS) past 1e-4 on one small entry',
    ('nn.functional.conv2d', 'forward'):
        "float16 with dilation: torch's CPU kernel returns wrong values (off by 2 to 4 times "
        "the output's scale from the float64 result, e.g. 156.2 for -56.2); ember's (in "
        'float32, rounded once) agree with float64 to 3e-4',
    ('nn.functional.conv_transpose3d', 'forward'):
        "float32 sample 8 on ember's oneDNN path: one near-zero element off by 2e-5 (1e-3 "
        'relative; the whole op passes with EMBER_ONEDNN=0)',
    ('nn.functional.soft_margin_loss', 'forward'):
        "float16: torch's log1p(exp(-y * x)) overflows to inf once -y * x > 11 (and its "
        'gradient to nan), an artefact where the true loss is finite; ember keeps the exact '
        'value, equal to torch\'s wherever torch is finite (tests/nn/test_loss.py)',
}


def _torch_float16_dilated_conv2d_is_wrong():
    """Whether torch's float16 conv2d kernel is wrong on this CPU for the OpInfo's dilated
    samples (off from the float64 result by more than a tenth of the output's scale; float16
    rounding is ~3e-4). It was on one AVX-512 machine (an Intel Xeon), and is right with
    torch's AVX2 kernels (an AMD EPYC) and on a Sapphire Rapids Xeon (AVX-512 FP16)."""
    import warnings

    import torch
    from opinfo_harness import ops_by_id

    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (padding="same" with an even kernel: a copy)
        for sample in ops_by_id()["nn.functional.conv2d"].sample_inputs("cpu", torch.float16):
            if sample.kwargs.get("dilation", 1) in (1, (1, 1)):
                continue
            wide = [a.double() if isinstance(a, torch.Tensor) else a for a in sample.args]
            exact = torch.nn.functional.conv2d(sample.input.double(), *wide, **sample.kwargs)
            got = torch.nn.functional.conv2d(sample.input, *sample.args, **sample.kwargs)
            scale = max(float(exact.abs().max()), 1.0)
            worst = max(worst, float((got.double() - exact).abs().max()) / scale)
    return worst > 0.1


# torch's own kernels that are wrong only on some CPUs: where torch is right, the check passes
# and must stay a plain test
if not _torch_float16_dilated_conv2d_is_wrong():
    del KNOWN_FAILURES[('nn.functional.conv2d', 'forward')]
