// ember/extension.h: the one header an ember C++ extension includes.
//
// It brings in pybind11 (with NumPy and STL conversions), defines `py` as pybind11's namespace,
// and offers `ember::Tensor`, a small strided view of an ember CPU tensor: typed data pointers,
// sizes, strides (in elements), dtype checks with clear errors, contiguous(), accessors, and
// allocation helpers. A bound function takes and returns `ember::Tensor` (or py::array_t<T>); the
// Python wrapper that `ember.utils.cpp_extension` puts around each bound function hands the C++
// side NumPy arrays sharing the tensors' memory and turns returned arrays back into tensors.
//
// Errors: EMBER_CHECK(cond, parts...) throws std::runtime_error (Python RuntimeError) with the
// parts streamed into the message; dtype mismatches read as torch's
// "expected scalar type Float but found Double".
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace py = pybind11;

#if defined(EMBER_EXTENSION_NAME) && !defined(TORCH_EXTENSION_NAME)
#define TORCH_EXTENSION_NAME EMBER_EXTENSION_NAME
#endif

namespace ember {

namespace detail {
inline void stream_parts(std::ostringstream&) {}
template <typename T, typename... Rest>
inline void stream_parts(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  stream_parts(os, rest...);
}
}  // namespace detail

template <typename... Parts>
[[noreturn]] inline void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::stream_parts(os, parts...);
  throw std::runtime_error(os.str());
}

// EMBER_CHECK(x.dim() == 2, "x must be 2-D, got ", x.dim(), "-D")  -> RuntimeError
#define EMBER_CHECK(cond, ...)                                         \
  do {                                                                 \
    if (!(cond)) {                                                     \
      ::ember::fail("Expected " #cond " to be true. ", ##__VA_ARGS__); \
    }                                                                  \
  } while (0)

// 16-bit floating types are storage only (convert through float yourself).
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
  float to_float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static BFloat16 from_float(float f) {  // round to nearest even
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40)};
    u += 0x7fffu + ((u >> 16) & 1u);
    return BFloat16{static_cast<uint16_t>(u >> 16)};
  }
};

enum class ScalarType : int8_t {
  Bool, Byte, Char, Short, Int, Long, Half, BFloat16, Float, Double, ComplexFloat, ComplexDouble,
  Undefined
};

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::Byte;
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kInt8 = ScalarType::Char;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kInt16 = ScalarType::Short;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt32 = ScalarType::Int;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kInt64 = ScalarType::Long;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kFloat64 = ScalarType::Double;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kComplex64 = ScalarType::ComplexFloat;
constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
constexpr ScalarType kComplex128 = ScalarType::ComplexDouble;
constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;

// torch's names, as in its "expected scalar type Float but found Double".
inline const char* to_string(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "Bool";
    case ScalarType::Byte: return "Byte";
    case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short";
    case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";
    case ScalarType::Half: return "Half";
    case ScalarType::BFloat16: return "BFloat16";
    case ScalarType::Float: return "Float";
    case ScalarType::Double: return "Double";
    case ScalarType::ComplexFloat: return "ComplexFloat";
    case ScalarType::ComplexDouble: return "ComplexDouble";
    default: return "Undefined";
  }
}
inline std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << to_string(t); }

inline size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: case ScalarType::Byte: case ScalarType::Char: return 1;
    case ScalarType::Short: case ScalarType::Half: case ScalarType::BFloat16: return 2;
    case ScalarType::Int: case ScalarType::Float: return 4;
    case ScalarType::Long: case ScalarType::Double: case ScalarType::ComplexFloat: return 8;
    case ScalarType::ComplexDouble: return 16;
    default: return 0;
  }
}

// The C++ type of each dtype: data_ptr<T>() checks that T matches the tensor's dtype.
template <typename T> struct scalar_type_of;
template <> struct scalar_type_of<bool> { static constexpr ScalarType value = kBool; };
template <> struct scalar_type_of<uint8_t> { static constexpr ScalarType value = kUInt8; };
template <> struct scalar_type_of<int8_t> { static constexpr ScalarType value = kInt8; };
template <> struct scalar_type_of<int16_t> { static constexpr ScalarType value = kInt16; };
template <> struct scalar_type_of<int32_t> { static constexpr ScalarType value = kInt32; };
template <> struct scalar_type_of<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct scalar_type_of<Half> { static constexpr ScalarType value = kFloat16; };
template <> struct scalar_type_of<BFloat16> { static constexpr ScalarType value = kBFloat16; };
template <> struct scalar_type_of<float> { static constexpr ScalarType value = kFloat32; };
template <> struct scalar_type_of<double> { static constexpr ScalarType value = kFloat64; };
template <> struct scalar_type_of<std::complex<float>> {
  static constexpr ScalarType value = kComplex64;
};
template <> struct scalar_type_of<std::complex<double>> {
  static constexpr ScalarType value = kComplex128;
};

namespace detail {
inline ScalarType scalar_type_of_dtype(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  switch (kind) {
    case 'b': return kBool;
    case 'u': if (size == 1) return kUInt8; break;
    case 'i':
      if (size == 1) return kInt8;
      if (size == 2) return kInt16;
      if (size == 4) return kInt32;
      if (size == 8) return kInt64;
      break;
    case 'f':
      if (size == 2) return kFloat16;
      if (size == 4) return kFloat32;
      if (size == 8) return kFloat64;
      break;
    case 'c':
      if (size == 8) return kComplex64;
      if (size == 16) return kComplex128;
      break;
    case 'V':
      if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16") {
        return kBFloat16;
      }
      break;
    default: break;
  }
  throw py::type_error("ember extension: unsupported array dtype " +
                       py::str(dt).cast<std::string>());
}

inline py::dtype dtype_of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return py::dtype("?");
    case ScalarType::Byte: return py::dtype("u1");
    case ScalarType::Char: return py::dtype("i1");
    case ScalarType::Short: return py::dtype("i2");
    case ScalarType::Int: return py::dtype("i4");
    case ScalarType::Long: return py::dtype("i8");
    case ScalarType::Half: return py::dtype("f2");
    case ScalarType::BFloat16:
      return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    case ScalarType::Float: return py::dtype("f4");
    case ScalarType::Double: return py::dtype("f8");
    case ScalarType::ComplexFloat: return py::dtype("c8");
    case ScalarType::ComplexDouble: return py::dtype("c16");
    default: throw std::invalid_argument("ember extension: undefined dtype");
  }
}

inline int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
  if (dim < lo || dim > hi) {
    throw py::index_error("Dimension out of range (expected to be in range of [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "], but got " +
                          std::to_string(dim) + ")");
  }
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}
}  // namespace detail

// Strided indexing without a copy: x.accessor<float, 2>()[i][j].
template <typename T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    return TensorAccessor<T, N - 1>(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1);
  }
  int64_t size(size_t d) const { return sizes_[d]; }
  int64_t stride(size_t d) const { return strides_[d]; }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <typename T>
class TensorAccessor<T, 1> {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  T& operator[](int64_t i) const { return data_[strides_[0] * i]; }
  int64_t size(size_t d) const { return sizes_[d]; }
  int64_t stride(size_t d) const { return strides_[d]; }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

// A view of an ember CPU tensor (held as the NumPy array that shares its memory, so the memory
// stays alive as long as the view does). Copying a Tensor copies the view, not the data.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(py::array array) : array_(std::move(array)) {
    dtype_ = detail::scalar_type_of_dtype(array_.dtype());
    const auto nd = array_.ndim();
    const auto itemsize = static_cast<int64_t>(array_.itemsize());
    sizes_.resize(nd);
    strides_.resize(nd);
    numel_ = 1;
    for (py::ssize_t d = 0; d < nd; ++d) {
      sizes_[d] = array_.shape(d);
      const auto byte_stride = array_.strides(d);
      EMBER_CHECK(byte_stride % itemsize == 0, "stride of dimension ", d,
                  " is not a multiple of the element size");
      strides_[d] = byte_stride / itemsize;
      numel_ *= sizes_[d];
    }
  }

  bool defined() const { return static_cast<bool>(array_); }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return numel_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t size(int64_t d) const { return sizes_[detail::wrap_dim(d, dim())]; }
  int64_t stride(int64_t d) const { return strides_[detail::wrap_dim(d, dim())]; }
  ScalarType scalar_type() const { return dtype_; }
  ScalarType dtype() const { return dtype_; }
  size_t element_size() const { return ember::element_size(dtype_); }
  py::array array() const { return array_; }

  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (sizes_[d] != 1 && strides_[d] != expected) return false;
      expected *= sizes_[d];
    }
    return true;
  }

  // This tensor if it is C-contiguous, else a contiguous copy (needs the GIL).
  Tensor contiguous() const {
    if (is_contiguous()) return *this;
    auto np = py::module_::import("numpy");
    return Tensor(np.attr("ascontiguousarray")(array_).cast<py::array>());
  }

  // Throws RuntimeError "<name>: expected scalar type Float but found Double".
  const Tensor& check_dtype(ScalarType expected, const char* name = "tensor") const {
    if (dtype_ != expected) {
      fail(name, ": expected scalar type ", expected, " but found ", dtype_);
    }
    return *this;
  }
  const Tensor& check_dim(int64_t expected, const char* name = "tensor") const {
    if (dim() != expected) {
      fail(name, ": expected a ", expected, "-D tensor but got a ", dim(), "-D tensor");
    }
    return *this;
  }

  void* data_ptr() const { return array_ ? const_cast<void*>(array_.data()) : nullptr; }
  template <typename T>
  T* data_ptr() const {
    constexpr ScalarType want = scalar_type_of<std::remove_cv_t<T>>::value;
    if (dtype_ != want) fail("expected scalar type ", want, " but found ", dtype_);
    return static_cast<T*>(data_ptr());
  }
  template <typename T>
  T* mutable_data_ptr() const {
    EMBER_CHECK(array_.writeable(), "the tensor's memory is read-only");
    return data_ptr<T>();
  }
  template <typename T>
  const T* const_data_ptr() const { return data_ptr<T>(); }

  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    if (dim() != static_cast<int64_t>(N)) {
      fail("TensorAccessor expected ", N, " dims but tensor has ", dim());
    }
    return TensorAccessor<T, N>(data_ptr<T>(), sizes_.data(), strides_.data());
  }

 private:
  py::array array_;
  ScalarType dtype_ = ScalarType::Undefined;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t numel_ = 0;
};

// Allocation (needs the GIL: allocate before releasing it).
inline Tensor empty(const std::vector<int64_t>& sizes, ScalarType dtype = kFloat32) {
  std::vector<py::ssize_t> shape(sizes.begin(), sizes.end());
  return Tensor(py::array(detail::dtype_of(dtype), shape));
}
inline Tensor zeros(const std::vector<int64_t>& sizes, ScalarType dtype = kFloat32) {
  Tensor t = empty(sizes, dtype);
  if (t.numel() > 0) std::memset(t.data_ptr(), 0, t.numel() * t.element_size());
  return t;
}
inline Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.dtype()); }
inline Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.dtype()); }

}  // namespace ember

namespace pybind11 {
namespace detail {
// ember::Tensor <-> NumPy array (the Python wrapper maps ember tensors <-> arrays).
template <>
struct type_caster<ember::Tensor> {
  PYBIND11_TYPE_CASTER(ember::Tensor, const_name("ember.Tensor"));

  bool load(handle src, bool /*convert*/) {
    if (!isinstance<array>(src)) return false;
    value = ember::Tensor(reinterpret_borrow<array>(src));
    return true;
  }
  static handle cast(const ember::Tensor& t, return_value_policy, handle) {
    if (!t.defined()) return none().release();
    return t.array().release();
  }
};
}  // namespace detail
}  // namespace pybind11
