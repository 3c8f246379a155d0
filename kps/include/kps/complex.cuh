// kps::complex<T>: complex64 (T = float) and complex128 (T = double) as the kernels read, accumulate
// and write them. A plain struct of the real and imaginary parts (NumPy's layout), aligned to its
// size (8 or 16 bytes) so a vector load moves whole elements; trivially constructible and copyable,
// so it sits in shared memory, unions and warp shuffles as any scalar does. Written here rather
// than taken from cuda::std::complex, which NVRTC does not ship without the CUDA toolkit's headers.
//
// Arithmetic a user's functor expects: + - * / (Smith's division, as NumPy's: no overflow where
// |b|^2 would), == and != by parts, and NumPy's lexicographic order (real part, then imaginary;
// a NaN in either part of either side compares false, numpy's CLT / CGT), so MAX, MIN and the
// arg-reductions need no code of their own. A real number converts implicitly (imaginary part 0),
// so `x != 0` and `value_t(1)` read as they do for reals. Helpers: kps::Real, kps::Imag, kps::Conj,
// kps::Abs (the magnitude, hypot), kps::Norm (|z|^2), kps::RealDot (Re(conj(a) b): a * b for reals).
#pragma once

namespace kps {

template <typename T>
struct alignas(2 * sizeof(T)) complex {
  T re, im;

  complex() = default;
  __device__ __forceinline__ constexpr complex(T r, T i = T(0)) : re(r), im(i) {}
  template <typename U>
  __device__ __forceinline__ explicit constexpr complex(const complex<U>& z)
      : re(static_cast<T>(z.re)), im(static_cast<T>(z.im)) {}
  // NumPy's cast of a complex to a real type: the real part (what static_cast<real>(z) gives).
  __device__ __forceinline__ explicit constexpr operator T() const { return re; }

  __device__ __forceinline__ friend complex operator+(complex a, complex b) { return {a.re + b.re, a.im + b.im}; }
  __device__ __forceinline__ friend complex operator-(complex a, complex b) { return {a.re - b.re, a.im - b.im}; }
  __device__ __forceinline__ friend complex operator-(complex a) { return {-a.re, -a.im}; }
  __device__ __forceinline__ friend complex operator*(complex a, complex b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
  // By a real number, part by part, as std::complex: a real count scales in two operations, not
  // the four multiplications or three divisions of a complex operand whose imaginary part is 0.
  __device__ __forceinline__ friend complex operator*(complex a, T b) { return {a.re * b, a.im * b}; }
  __device__ __forceinline__ friend complex operator*(T a, complex b) { return {a * b.re, a * b.im}; }
  __device__ __forceinline__ friend complex operator/(complex a, T b) { return {a.re / b, a.im / b}; }
  __device__ __forceinline__ friend complex operator/(complex a, complex b) {
    const T abs_re = b.re < T(0) ? -b.re : b.re, abs_im = b.im < T(0) ? -b.im : b.im;
    if (abs_re >= abs_im) {  // (a division by a real count: r = 0, den = the count, exact)
      const T r = b.im / b.re, den = b.re + b.im * r;
      return {(a.re + a.im * r) / den, (a.im - a.re * r) / den};
    }
    const T r = b.re / b.im, den = b.re * r + b.im;
    return {(a.re * r + a.im) / den, (a.im * r - a.re) / den};
  }
  __device__ __forceinline__ complex& operator+=(complex b) { return *this = *this + b; }
  __device__ __forceinline__ complex& operator-=(complex b) { return *this = *this - b; }
  __device__ __forceinline__ complex& operator*=(complex b) { return *this = *this * b; }
  __device__ __forceinline__ complex& operator/=(complex b) { return *this = *this / b; }

  __device__ __forceinline__ friend bool operator==(complex a, complex b) { return a.re == b.re && a.im == b.im; }
  __device__ __forceinline__ friend bool operator!=(complex a, complex b) { return !(a == b); }
  // numpy's CLT, CLE, CGT, CGE (npy_math): lexicographic, false where an imaginary part is NaN
  __device__ __forceinline__ friend bool operator<(complex a, complex b) {
    return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im < b.im);
  }
  __device__ __forceinline__ friend bool operator<=(complex a, complex b) {
    return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im <= b.im);
  }
  __device__ __forceinline__ friend bool operator>(complex a, complex b) { return b < a; }
  __device__ __forceinline__ friend bool operator>=(complex a, complex b) { return b <= a; }
};

// IsComplex<T>::value: whether T is a kps::complex.
template <typename T>
struct IsComplex {
  static constexpr bool value = false;
};
template <typename T>
struct IsComplex<complex<T>> {
  static constexpr bool value = true;
};

template <typename T>
__device__ __forceinline__ T Real(T x) { return x; }
template <typename T>
__device__ __forceinline__ T Real(complex<T> z) { return z.re; }
template <typename T>
__device__ __forceinline__ T Imag(T) { return T(0); }
template <typename T>
__device__ __forceinline__ T Imag(complex<T> z) { return z.im; }
template <typename T>
__device__ __forceinline__ T Conj(T x) { return x; }
template <typename T>
__device__ __forceinline__ complex<T> Conj(complex<T> z) { return {z.re, -z.im}; }
template <typename T>
__device__ __forceinline__ T Norm(T x) { return x * x; }
template <typename T>
__device__ __forceinline__ T Norm(complex<T> z) { return z.re * z.re + z.im * z.im; }
__device__ __forceinline__ float Abs(complex<float> z) { return hypotf(z.re, z.im); }
__device__ __forceinline__ double Abs(complex<double> z) { return hypot(z.re, z.im); }

// |x| as numpy.linalg.norm reads an element (its 1-, inf-, -inf- and p-norms): Abs for floats and
// complex numbers; integers and bool in double first, so the least value of a signed type keeps its
// magnitude (Abs of an int8's -128 wraps to -128; numpy.linalg.norm converts ints to float64).
template <typename T>
__device__ __forceinline__ double Magnitude(T x) { return Abs(static_cast<double>(x)); }
__device__ __forceinline__ float Magnitude(float x) { return fabsf(x); }
__device__ __forceinline__ double Magnitude(double x) { return fabs(x); }
template <typename T>
__device__ __forceinline__ T Magnitude(complex<T> z) { return Abs(z); }

// NumPy's a / n for a count n (mean, nanmean): NumPy divides a complex a by the complex (n, 0), so
// this is operator/'s Smith division with its ratio (+0 over a count) and denominator (n) folded in:
// two divisions, not three and a branch, and an infinite part still makes the other part NaN, as
// NumPy's inf * 0 does (operator/(complex, T) divides part by part, as std::complex). A real a: a / n.
template <typename T>
__device__ __forceinline__ T DivideByCount(T a, T n) { return a / n; }
template <typename T>
__device__ __forceinline__ complex<T> DivideByCount(complex<T> a, T n) {
  return {(a.re + a.im * T(0)) / n, (a.im - a.re * T(0)) / n};
}
// DivideByCount given 1 / n (the Welford epilogues' reciprocal, computed once a thread): each part
// times it, an infinite part still making the other NaN, as NumPy's mean of complex numbers.
template <typename T>
__device__ __forceinline__ T ScaleByCount(T a, T inv_n) { return a * inv_n; }
template <typename T>
__device__ __forceinline__ complex<T> ScaleByCount(complex<T> a, T inv_n) {
  return {(a.re + a.im * T(0)) * inv_n, (a.im - a.re * T(0)) * inv_n};
}

// Re(conj(a) b): the product of two reals, and for complex numbers what sums of squared
// magnitudes need (|y + d|^2 = |y|^2 + 2 RealDot(d, y) + |d|^2: Welford's merge, kps/statistics.py).
template <typename T>
__device__ __forceinline__ T RealDot(T a, T b) { return a * b; }
template <typename T>
__device__ __forceinline__ T RealDot(complex<T> a, complex<T> b) { return a.re * b.re + a.im * b.im; }

// A NaN where z has one in either part, else 0 (z - z for reals): NumPy's NaN for a variance
// whose data hold a NaN or an infinity, whichever part it is in.
template <typename T>
__device__ __forceinline__ T NanOf(T x) { return x - x; }
template <typename T>
__device__ __forceinline__ T NanOf(complex<T> z) { return (z.re - z.re) + (z.im - z.im); }

// +inf of a float type (Welford's M2 where the squares of finite data overflow, kps/statistics.py).
template <typename T>
__device__ __forceinline__ T Infinity();
template <>
__device__ __forceinline__ float Infinity<float>() { return __int_as_float(0x7f800000); }
template <>
__device__ __forceinline__ double Infinity<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

// numpy.fmax / fmin of complex numbers: a NaN (in either part) loses to any number; otherwise the
// lexicographic order (NumPy: CGE(a, b) || isnan(b) ? a : b).
template <typename T>
__device__ __forceinline__ complex<T> FMax(complex<T> a, complex<T> b) { return (a >= b || b != b) ? a : b; }
template <typename T>
__device__ __forceinline__ complex<T> FMin(complex<T> a, complex<T> b) { return (a <= b || b != b) ? a : b; }

// numpy.ptp of complex numbers: max - min as complex numbers (no integer wrapping to mimic).
template <typename Out, typename T>
__device__ __forceinline__ Out PeakToPeak(complex<T> hi, complex<T> lo) { return Cast<Out>(hi - lo); }

// Neumaier's TwoSum error (types.cuh) of each part on its own: a compensated complex sum.
template <typename T>
__device__ __forceinline__ complex<T> TwoSumError(complex<T> a, complex<T> b, complex<T> t) {
  return {TwoSumError(a.re, b.re, t.re), TwoSumError(a.im, b.im, t.im)};
}

// A complex number is true where either part is nonzero (NaN included): numpy.any, all, nonzero.
template <typename T>
struct Caster<bool, complex<T>> {
  __device__ static bool Apply(complex<T> z) { return z.re != T(0) || z.im != T(0); }
};

// The raw bits of a complex state field are not handed back (kps/raw.py takes real fields only).

}  // namespace kps
