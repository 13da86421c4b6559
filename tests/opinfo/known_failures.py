"""The OpInfo checks that ember fails today, each with the reason.

Keys are (op id, check), with check one of "forward", "backward", "forward_ad"; the op id
is the OpInfo's name plus its variant (``linalg.pinv.hermitian``). ``test_opinfo.py`` runs
each listed check over every sample and dtype as a strict xfail: fix the op, then delete
its entry. This list only shrinks.
"""

KNOWN_FAILURES = {
    ('_batch_norm_with_update', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_batch_norm_with_update', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_batch_norm_with_update', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_chunk_cat', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_native_batch_norm_legit', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_native_batch_norm_legit', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_native_batch_norm_legit', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_segment_reduce.lengths', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_segment_reduce.lengths', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_segment_reduce.offsets', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_segment_reduce.offsets', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_softmax_backward_data', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_softmax_backward_data', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_softmax_backward_data', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_unsafe_masked_index', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_unsafe_masked_index', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_unsafe_masked_index', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_unsafe_masked_index_put_accumulate', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_unsafe_masked_index_put_accumulate', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_unsafe_masked_index_put_accumulate', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_upsample_bilinear2d_aa', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_upsample_bilinear2d_aa', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('_upsample_bilinear2d_aa', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('addbmm', 'forward'):
        "float16/bfloat16: rounding of intermediate results differs from torch's beyond "
        'the tolerance',
    ('as_strided_scatter', 'backward'):
        "gradient for input: torch's storage-based formula differs from zeroing the "
        'scattered positions',
    ('cholesky_inverse', 'forward_ad'):
        "forward AD: ember's JVP loses precision (~1e-5 relative) vs torch's",
    ('cov', 'forward_ad'):
        "forward AD with aweights: ember's JVP loses precision (~1e-7 relative) vs "
        "torch's",
    ('diagonal_scatter', 'forward_ad'):
        'forward AD of writes into a view of a copy: the src tangent is dropped',
    ('fill', 'forward_ad'):
        "forward AD of in-place fill: the input's tangent is kept instead of zero",
    ('histc', 'forward'):
        'bfloat16: values on bin edges land in different bins',
    ('histogram', 'forward'):
        "empty input: ember's default bin range differs from torch's",
    ('histogramdd', 'forward'):
        "non-monotonic bin edges: torch accepts them, ember's NumPy kernel refuses",
    ('index_fill', 'forward_ad'):
        "forward AD of index_fill: the filled positions keep the input's tangent",
    ('linalg.eig', 'forward_ad'):
        'forward AD of linalg_eig is not implemented',
    ('linalg.eigvals', 'forward_ad'):
        'forward AD of linalg_eig is not implemented',
    ('linalg.pinv.singular', 'backward'):
        'gradient of pinv at rank-deficient matrices: ember differentiates through the '
        'SVD, torch uses its pinv_backward formula',
    ('linalg.pinv.singular', 'forward_ad'):
        'gradient of pinv at rank-deficient matrices: ember differentiates through the '
        'SVD, torch uses its pinv_backward formula',
    ('linalg.svd', 'backward'):
        'gradients of the complete SVD (full_matrices=True): ember refuses them',
    ('linalg.svd', 'forward_ad'):
        'gradients of the complete SVD (full_matrices=True): ember refuses them',
    ('logcumsumexp', 'forward'):
        "complex input keeps torch's unwrapped imaginary part; forward AD precision",
    ('logcumsumexp', 'forward_ad'):
        "complex input keeps torch's unwrapped imaginary part; forward AD precision",
    ('matrix_exp', 'forward'):
        "float32: ember's scaling-and-squaring loses ~1e-3 relative accuracy on small "
        'entries next to large ones',
    ('max_pool2d_with_indices_backward', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('max_pool2d_with_indices_backward', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('max_pool2d_with_indices_backward', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('native_batch_norm', 'forward_ad'):
        "forward AD: the tangents of the saved mean/invstd outputs differ from torch's",
    ('native_dropout_backward', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('native_dropout_backward', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('native_group_norm', 'backward'):
        "empty batch: a reshape with -1 is ambiguous in ember's group_norm",
    ('native_group_norm', 'forward'):
        "empty batch: a reshape with -1 is ambiguous in ember's group_norm",
    ('native_group_norm', 'forward_ad'):
        "empty batch: a reshape with -1 is ambiguous in ember's group_norm",
    ('nn.functional.conv2d', 'forward'):
        "float16/bfloat16: rounding of intermediate results differs from torch's beyond "
        'the tolerance',
    ('nn.functional.conv_transpose3d', 'forward'):
        "float16/bfloat16: rounding of intermediate results differs from torch's beyond "
        'the tolerance',
    ('nn.functional.max_unpool1d', 'forward_ad'):
        'forward AD: tangent scattered where indices repeat differs',
    ('nn.functional.max_unpool2d', 'forward_ad'):
        'forward AD: tangent scattered where indices repeat differs',
    ('nn.functional.max_unpool3d', 'forward_ad'):
        'forward AD: tangent scattered where indices repeat differs',
    ('nn.functional.multi_head_attention_forward', 'forward'):
        "float16/bfloat16: rounding of intermediate results differs from torch's beyond "
        'the tolerance',
    ('nn.functional.scaled_dot_product_attention', 'forward'):
        "float16/bfloat16: rounding of intermediate results differs from torch's beyond "
        'the tolerance',
    ('nn.functional.soft_margin_loss', 'forward'):
        'float16: ember computes stably (finite) where torch overflows to inf '
        '(tests/nn/test_loss.py keeps it stable)',
    ('searchsorted', 'forward'):
        'an empty (0, 0) sorted sequence fails a reshape',
    ('select_scatter', 'forward_ad'):
        'forward AD of writes into a view of a copy: the src tangent is dropped',
    ('slice', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('slice', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('slice', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('slice_scatter', 'forward_ad'):
        'forward AD of writes into a view of a copy: the src tangent is dropped',
    ('svd', 'backward'):
        'gradients of the complete SVD (some=False): ember refuses them',
    ('svd', 'forward_ad'):
        'gradients of the complete SVD (some=False): ember refuses them',
    ('torch.ops.aten._safe_softmax.default', 'backward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('torch.ops.aten._safe_softmax.default', 'forward'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('torch.ops.aten._safe_softmax.default', 'forward_ad'):
        'a torch-internal ATen operator (torch.ops.aten / private torch._ name) ember '
        'does not expose',
    ('zero_', 'forward_ad'):
        "forward AD of in-place zero_: the input's tangent is kept instead of zero",
}
