"""A fused LLTM cell in C++ (forward and backward), wrapped in an autograd.Function, trained.

    python examples/cpp_extension_lltm.py              # compiles once (~10 s), then 200 steps
    python examples/cpp_extension_lltm.py --steps 20 --verbose

This is PyTorch's C++-extension tutorial (the "Long-Long-Term-Memory" cell) on ember:
``ember.utils.cpp_extension.load_inline`` compiles the C++ below the first time (the build is
cached in ``~/.cache/ember_extensions/lltm_cpp``, or ``--build-dir``), the C++ functions take and
return ember tensors (``ember::Tensor`` in C++), and ``LLTMFunction`` gives the fused cell its
hand-written backward. The cell is checked against the same math written with ember operators
(autograd derives that one), then a readout learns to predict a running mean of the inputs.
It runs on the CPU only (no ``--device``): the C++ kernel reads host memory.
"""

import argparse

import ember as torch
from ember import nn
from ember.utils.cpp_extension import load_inline

# One LLTM step, batch B, input I, state S:
#   X = [old_h, input]                         (B, S+I)
#   gates = X @ W^T + b                        (B, 3S): input, output, candidate pre-activations
#   new_cell = old_cell + elu(cand) * sigmoid(in)
#   new_h = tanh(new_cell) * sigmoid(out)
LLTM_SOURCE = r"""
#include <cmath>

namespace {

template <typename T> T sigmoid(T z) { return T(1) / (T(1) + std::exp(-z)); }
template <typename T> T elu(T z) { return z > 0 ? z : std::expm1(z); }

template <typename T>
void forward_kernel(int64_t B, int64_t I, int64_t S, const T* input, const T* W, const T* bias,
                    const T* old_h, const T* old_cell, T* new_h, T* new_cell, T* gates_out,
                    T* X) {
  const int64_t K = S + I;
  for (int64_t b = 0; b < B; ++b) {
    T* x = X + b * K;
    for (int64_t k = 0; k < S; ++k) x[k] = old_h[b * S + k];
    for (int64_t k = 0; k < I; ++k) x[S + k] = input[b * I + k];
    T* g = gates_out + b * 3 * S;
    for (int64_t j = 0; j < 3 * S; ++j) {
      T acc = bias[j];
      const T* w = W + j * K;
      for (int64_t k = 0; k < K; ++k) acc += x[k] * w[k];
      g[j] = acc;
    }
    for (int64_t s = 0; s < S; ++s) {
      const T c = old_cell[b * S + s] + elu(g[2 * S + s]) * sigmoid(g[s]);
      new_cell[b * S + s] = c;
      new_h[b * S + s] = std::tanh(c) * sigmoid(g[S + s]);
    }
  }
}

template <typename T>
void backward_kernel(int64_t B, int64_t I, int64_t S, const T* grad_h, const T* grad_cell,
                     const T* new_cell, const T* gates, const T* X, const T* W, T* d_old_h,
                     T* d_input, T* d_W, T* d_bias, T* d_old_cell, T* d_gates) {
  const int64_t K = S + I;
  for (int64_t b = 0; b < B; ++b) {
    const T* g = gates + b * 3 * S;
    T* dg = d_gates + b * 3 * S;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t i = b * S + s;
      const T ig = sigmoid(g[s]), og = sigmoid(g[S + s]), z = g[2 * S + s];
      const T t = std::tanh(new_cell[i]);
      const T d_cell = (T(1) - t * t) * og * grad_h[i] + grad_cell[i];
      d_old_cell[i] = d_cell;
      dg[s] = elu(z) * d_cell * ig * (T(1) - ig);                // d input-gate pre-activation
      dg[S + s] = t * grad_h[i] * og * (T(1) - og);              // d output-gate pre-activation
      dg[2 * S + s] = ig * d_cell * (z > 0 ? T(1) : std::exp(z));  // d candidate pre-activation
    }
  }
  for (int64_t j = 0; j < 3 * S; ++j) {         // d_W = d_gates^T X, d_bias = sum_b d_gates
    T db = 0;
    for (int64_t k = 0; k < K; ++k) d_W[j * K + k] = 0;
    for (int64_t b = 0; b < B; ++b) {
      const T d = d_gates[b * 3 * S + j];
      db += d;
      for (int64_t k = 0; k < K; ++k) d_W[j * K + k] += d * X[b * K + k];
    }
    d_bias[j] = db;
  }
  for (int64_t b = 0; b < B; ++b) {             // d_X = d_gates W, split into old_h and input
    for (int64_t k = 0; k < K; ++k) {
      T acc = 0;
      for (int64_t j = 0; j < 3 * S; ++j) acc += d_gates[b * 3 * S + j] * W[j * K + k];
      if (k < S) d_old_h[b * S + k] = acc; else d_input[b * I + k - S] = acc;
    }
  }
}

void check_inputs(const ember::Tensor& input, const ember::Tensor& weights,
                  const ember::Tensor& bias, const ember::Tensor& old_h,
                  const ember::Tensor& old_cell) {
  input.check_dim(2, "input");
  const auto dtype = input.dtype();
  EMBER_CHECK(dtype == ember::kFloat32 || dtype == ember::kFloat64,
              "lltm: expected float32 or float64 tensors, got ", dtype);
  for (const auto* t : {&weights, &bias, &old_h, &old_cell}) t->check_dtype(dtype, "lltm");
  const int64_t S = old_h.size(1), K = S + input.size(1);
  EMBER_CHECK(weights.sizes() == std::vector<int64_t>({3 * S, K}),
              "lltm: weights must have shape (3*state_size, state_size+input_features)");
  EMBER_CHECK(bias.numel() == 3 * S, "lltm: bias must have 3*state_size elements");
  EMBER_CHECK(old_h.size(0) == input.size(0) && old_cell.sizes() == old_h.sizes(),
              "lltm: old_h and old_cell must have shape (batch, state_size)");
}

}  // namespace

// Returns new_h, new_cell and what backward needs: the gate pre-activations and X.
std::vector<ember::Tensor> lltm_forward(ember::Tensor input, ember::Tensor weights,
                                        ember::Tensor bias, ember::Tensor old_h,
                                        ember::Tensor old_cell) {
  check_inputs(input, weights, bias, old_h, old_cell);
  input = input.contiguous(); weights = weights.contiguous(); bias = bias.contiguous();
  old_h = old_h.contiguous(); old_cell = old_cell.contiguous();
  const int64_t B = input.size(0), I = input.size(1), S = old_h.size(1);
  const auto dtype = input.dtype();
  auto new_h = ember::empty({B, S}, dtype), new_cell = ember::empty({B, S}, dtype);
  auto gates = ember::empty({B, 3 * S}, dtype), X = ember::empty({B, S + I}, dtype);
  {
    py::gil_scoped_release no_gil;   // plain C++ from here: other Python threads may run
    if (dtype == ember::kFloat64) {
      forward_kernel<double>(B, I, S, input.data_ptr<double>(), weights.data_ptr<double>(),
                             bias.data_ptr<double>(), old_h.data_ptr<double>(),
                             old_cell.data_ptr<double>(), new_h.data_ptr<double>(),
                             new_cell.data_ptr<double>(), gates.data_ptr<double>(),
                             X.data_ptr<double>());
    } else {
      forward_kernel<float>(B, I, S, input.data_ptr<float>(), weights.data_ptr<float>(),
                            bias.data_ptr<float>(), old_h.data_ptr<float>(),
                            old_cell.data_ptr<float>(), new_h.data_ptr<float>(),
                            new_cell.data_ptr<float>(), gates.data_ptr<float>(),
                            X.data_ptr<float>());
    }
  }
  return {new_h, new_cell, gates, X};
}

// Returns d_old_h, d_input, d_weights, d_bias, d_old_cell.
std::vector<ember::Tensor> lltm_backward(ember::Tensor grad_h, ember::Tensor grad_cell,
                                         ember::Tensor new_cell, ember::Tensor gates,
                                         ember::Tensor X, ember::Tensor weights) {
  const auto dtype = weights.dtype();
  for (const auto* t : {&grad_h, &grad_cell, &new_cell, &gates, &X}) {
    t->check_dtype(dtype, "lltm_backward");
  }
  grad_h = grad_h.contiguous(); grad_cell = grad_cell.contiguous();
  new_cell = new_cell.contiguous(); gates = gates.contiguous(); X = X.contiguous();
  weights = weights.contiguous();
  const int64_t B = X.size(0), S = new_cell.size(1), I = X.size(1) - S;
  auto d_old_h = ember::empty({B, S}, dtype), d_input = ember::empty({B, I}, dtype);
  auto d_W = ember::empty({3 * S, S + I}, dtype), d_bias = ember::empty({3 * S}, dtype);
  auto d_old_cell = ember::empty({B, S}, dtype), d_gates = ember::empty({B, 3 * S}, dtype);
  {
    py::gil_scoped_release no_gil;
    if (dtype == ember::kFloat64) {
      backward_kernel<double>(B, I, S, grad_h.data_ptr<double>(), grad_cell.data_ptr<double>(),
                              new_cell.data_ptr<double>(), gates.data_ptr<double>(),
                              X.data_ptr<double>(), weights.data_ptr<double>(),
                              d_old_h.data_ptr<double>(), d_input.data_ptr<double>(),
                              d_W.data_ptr<double>(), d_bias.data_ptr<double>(),
                              d_old_cell.data_ptr<double>(), d_gates.data_ptr<double>());
    } else {
      backward_kernel<float>(B, I, S, grad_h.data_ptr<float>(), grad_cell.data_ptr<float>(),
                             new_cell.data_ptr<float>(), gates.data_ptr<float>(),
                             X.data_ptr<float>(), weights.data_ptr<float>(),
                             d_old_h.data_ptr<float>(), d_input.data_ptr<float>(),
                             d_W.data_ptr<float>(), d_bias.data_ptr<float>(),
                             d_old_cell.data_ptr<float>(), d_gates.data_ptr<float>());
    }
  }
  return {d_old_h, d_input, d_W, d_bias, d_old_cell};
}
"""

FUNCTIONS = {"lltm_forward": "LLTM forward: new_h, new_cell, gate pre-activations, X",
             "lltm_backward": "LLTM backward: d_old_h, d_input, d_weights, d_bias, d_old_cell"}


def load_lltm(build_directory=None, verbose=False):
    """Compile (first time only) and load the C++ LLTM extension."""
    return load_inline("lltm_cpp", LLTM_SOURCE, functions=FUNCTIONS,
                       build_directory=build_directory, verbose=verbose)


def make_function(ext):
    """The autograd.Function around the extension's forward and backward."""

    class LLTMFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weights, bias, old_h, old_cell):
            new_h, new_cell, gates, X = ext.lltm_forward(input, weights, bias, old_h, old_cell)
            ctx.save_for_backward(new_cell, gates, X, weights)
            return new_h, new_cell

        @staticmethod
        def backward(ctx, grad_h, grad_cell):
            new_cell, gates, X, weights = ctx.saved_tensors
            d_old_h, d_input, d_weights, d_bias, d_old_cell = ext.lltm_backward(
                grad_h, grad_cell, new_cell, gates, X, weights)
            return d_input, d_weights, d_bias, d_old_h, d_old_cell

    return LLTMFunction


def reference_cell(input, weights, bias, old_h, old_cell):
    """The same cell written with ember operators (autograd derives its backward)."""
    X = torch.cat([old_h, input], dim=1)
    gates = X @ weights.t() + bias
    in_gate, out_gate, candidate = gates.chunk(3, dim=1)
    new_cell = old_cell + nn.functional.elu(candidate) * in_gate.sigmoid()
    return new_cell.tanh() * out_gate.sigmoid(), new_cell


class LLTM(nn.Module):
    def __init__(self, function, input_features, state_size):
        super().__init__()
        self.function = function
        self.weights = nn.Parameter(torch.empty(3 * state_size, input_features + state_size))
        self.bias = nn.Parameter(torch.empty(3 * state_size))
        bound = 1.0 / state_size ** 0.5
        nn.init.uniform_(self.weights, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input, state):
        return self.function.apply(input, self.weights, self.bias, *state)


def main(argv=None):
    parser = argparse.ArgumentParser(description="LLTM cell as a C++ extension")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--input-features", type=int, default=8)
    parser.add_argument("--state-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--build-dir", default=None, help="build cache (default: ~/.cache/...)")
    parser.add_argument("--verbose", action="store_true", help="show the compiler command")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    ext = load_lltm(args.build_dir, args.verbose)
    function = make_function(ext)
    B, I, S = args.batch_size, args.input_features, args.state_size

    # the fused cell agrees with the same math written with ember operators, values and grads
    cell = LLTM(function, I, S).double()
    x, h, c = (torch.randn(B, n, dtype=torch.float64) for n in (I, S, S))
    ours = function.apply(x, cell.weights, cell.bias, h, c)
    ref = reference_cell(x, cell.weights, cell.bias, h, c)
    g_ours = torch.autograd.grad(ours[0].sum() + ours[1].sum(), (cell.weights, cell.bias))
    g_ref = torch.autograd.grad(ref[0].sum() + ref[1].sum(), (cell.weights, cell.bias))
    max_diff = max((a - b).abs().max().item() for a, b in zip((*ours, *g_ours), (*ref, *g_ref)))
    print(f"C++ cell vs ember ops: max difference {max_diff:.2e}")

    # train: a linear readout of the last state predicts the mean of the inputs' first feature
    cell = LLTM(function, I, S)
    readout = nn.Linear(S, 1)
    optimizer = torch.optim.Adam([*cell.parameters(), *readout.parameters()], lr=args.lr)
    losses = []
    for step in range(args.steps):
        xs = torch.randn(args.seq_len, B, I)
        target = xs[:, :, :1].mean(0)
        state = (torch.zeros(B, S), torch.zeros(B, S))
        for t in range(args.seq_len):
            state = cell(xs[t], state)
        loss = nn.functional.mse_loss(readout(state[0]), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    return {"losses": losses, "max_diff": max_diff}


if __name__ == "__main__":
    main()
