// Portable kernels: plain indexed loops over the element math that the CUDA
// kernels share (kernels/element_math.h), which the compiler auto-vectorises.
//
// No __restrict: dst may equal a, b or src exactly. An indexed loop reads
// element i of every input before writing element i of dst, so exact
// aliasing is harmless, and the compiler still vectorises it behind a
// runtime overlap check (measured: float32 sum runs as fast with dst == a
// or dst == b as with distinct buffers).
#include <cstring>
#include <type_traits>

#include "kernels/element_math.h"
#include "kernels/element_types.h"
#include "kernels/kernel_table.h"

namespace chorus::kernels {
namespace {

template <DataType kType, typename Op>
void ReduceLoop(void* dst, const void* a, const void* b, size_t count) {
  using E = ElementOf<kType>;
  using S = typename E::Storage;
  S* out = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  for (size_t i = 0; i < count; ++i) out[i] = ReduceElement<kType, Op>(x[i], y[i]);
}

template <DataType kType>
void ScaleLoop(void* dst, const void* src, size_t count, const void* scalar) {
  using E = ElementOf<kType>;
  using S = typename E::Storage;
  S scalar_storage;
  std::memcpy(&scalar_storage, scalar, sizeof(S));  // scalar may be unaligned
  const auto factor = E::Load(scalar_storage);
  S* out = static_cast<S*>(dst);
  const S* in = static_cast<const S*>(src);
  for (size_t i = 0; i < count; ++i) out[i] = ScaleElement<kType>(in[i], factor);
}

// Integers follow C's `x /= divisor` (truncation toward zero) except that
// MIN / -1 wraps instead of trapping; a zero divisor leaves integers unchanged
// rather than raising SIGFPE (callers pass nranks, so it never happens).
template <DataType kType>
void DivideLoop(void* buf, size_t count, int divisor) {
  using S = typename ElementOf<kType>::Storage;
  S* data = static_cast<S*>(buf);
  for (size_t i = 0; i < count; ++i) data[i] = DivideElement<kType>(data[i], divisor);
}

// fp16/bf16 <-> float32 through base/half.h's branch-free scalar functions.
template <DataType kType>
void WidenLoop(float* dst, const uint16_t* src, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = ElementOf<kType>::Load(src[i]);
}

template <DataType kType>
void NarrowLoop(uint16_t* dst, const float* src, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = ElementOf<kType>::Store(src[i]);
}

template <DataType kType>
constexpr void FillType(KernelTable& table) {
  table.reduce[kType][static_cast<int>(ReduceOp::kSum)] = &ReduceLoop<kType, SumOp>;
  table.reduce[kType][static_cast<int>(ReduceOp::kProd)] = &ReduceLoop<kType, ProdOp>;
  table.reduce[kType][static_cast<int>(ReduceOp::kMax)] = &ReduceLoop<kType, MaxOp>;
  table.reduce[kType][static_cast<int>(ReduceOp::kMin)] = &ReduceLoop<kType, MinOp>;
  table.scale[kType] = &ScaleLoop<kType>;
  table.divide[kType] = &DivideLoop<kType>;
}

constexpr KernelTable MakePortableTable() {
  KernelTable table{};
  table.name = "portable";
  FillType<chorusInt8>(table);
  FillType<chorusUint8>(table);
  FillType<chorusInt32>(table);
  FillType<chorusUint32>(table);
  FillType<chorusInt64>(table);
  FillType<chorusUint64>(table);
  FillType<chorusFloat16>(table);
  FillType<chorusFloat32>(table);
  FillType<chorusFloat64>(table);
  FillType<chorusBfloat16>(table);
  table.half_to_float = &WidenLoop<chorusFloat16>;
  table.bfloat16_to_float = &WidenLoop<chorusBfloat16>;
  table.float_to_half = &NarrowLoop<chorusFloat16>;
  table.float_to_bfloat16 = &NarrowLoop<chorusBfloat16>;
  return table;
}

constexpr KernelTable kPortableTable = MakePortableTable();
static_assert(chorusNumTypes == 10, "a new data type needs a FillType line above");

}  // namespace

const KernelTable& PortableKernels() { return kPortableTable; }

}  // namespace chorus::kernels
