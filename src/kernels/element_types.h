// How each chorusDataType_t is stored in memory and in which type it is
// computed. fp16/bf16 are stored as raw bits and computed in float32; every
// other type is computed in itself.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/half.h"
#include "base/host_device.h"

namespace chorus::kernels {

template <typename T>
struct NativeElement {
  using Storage = T;
  using Compute = T;
  CHORUS_HOST_DEVICE static Compute Load(Storage value) { return value; }
  CHORUS_HOST_DEVICE static Storage Store(Compute value) { return value; }
};

struct HalfElement {
  using Storage = uint16_t;
  using Compute = float;
  CHORUS_HOST_DEVICE static Compute Load(Storage bits) { return HalfToFloat(bits); }
  CHORUS_HOST_DEVICE static Storage Store(Compute value) { return FloatToHalf(value); }
};

struct Bfloat16Element {
  using Storage = uint16_t;
  using Compute = float;
  CHORUS_HOST_DEVICE static Compute Load(Storage bits) { return Bfloat16ToFloat(bits); }
  CHORUS_HOST_DEVICE static Storage Store(Compute value) { return FloatToBfloat16(value); }
};

template <DataType kType>
struct ElementOf;
template <> struct ElementOf<chorusInt8> : NativeElement<int8_t> {};
template <> struct ElementOf<chorusUint8> : NativeElement<uint8_t> {};
template <> struct ElementOf<chorusInt32> : NativeElement<int32_t> {};
template <> struct ElementOf<chorusUint32> : NativeElement<uint32_t> {};
template <> struct ElementOf<chorusInt64> : NativeElement<int64_t> {};
template <> struct ElementOf<chorusUint64> : NativeElement<uint64_t> {};
template <> struct ElementOf<chorusFloat16> : HalfElement {};
template <> struct ElementOf<chorusFloat32> : NativeElement<float> {};
template <> struct ElementOf<chorusFloat64> : NativeElement<double> {};
template <> struct ElementOf<chorusBfloat16> : Bfloat16Element {};

}  // namespace chorus::kernels
