// Compile-time checks of include/chorus/chorus.hpp. Nothing here calls into
// the library, so this test links without it.
#include "chorus/chorus.hpp"

#include <cstdint>
#include <type_traits>

#include <gtest/gtest.h>

namespace {

using chorus::DataTypeOf;
using chorus::cpp::Comm;
using chorus::cpp::Group;
using chorus::cpp::PreMulSumOp;
using chorus::cpp::Stream;

static_assert(DataTypeOf<int8_t>() == chorusInt8);
static_assert(DataTypeOf<signed char>() == chorusInt8);
static_assert(DataTypeOf<uint8_t>() == chorusUint8);
static_assert(DataTypeOf<int32_t>() == chorusInt32);
static_assert(DataTypeOf<uint32_t>() == chorusUint32);
static_assert(DataTypeOf<int64_t>() == chorusInt64);
static_assert(DataTypeOf<long long>() == chorusInt64);
static_assert(DataTypeOf<uint64_t>() == chorusUint64);
static_assert(DataTypeOf<unsigned long long>() == chorusUint64);
static_assert(DataTypeOf<float>() == chorusFloat32);
static_assert(DataTypeOf<const float>() == chorusFloat32);
static_assert(DataTypeOf<double>() == chorusFloat64);
static_assert(DataTypeOf<chorus::cpp::Float16>() == chorusFloat16);
static_assert(DataTypeOf<chorus::cpp::Bfloat16>() == chorusBfloat16);
static_assert(DataTypeOf<char>() == (static_cast<char>(-1) < 0 ? chorusInt8 : chorusUint8));
static_assert(!chorus::cpp::kIsChorusElement<bool>);
static_assert(!chorus::cpp::kIsChorusElement<int16_t>);
static_assert(!chorus::cpp::kIsChorusElement<long double>);
static_assert(!chorus::cpp::kIsChorusElement<void*>);
static_assert(sizeof(chorus::cpp::Float16) == 2 && sizeof(chorus::cpp::Bfloat16) == 2);

// Owning handles: move-only, no bigger than the raw handle.
template <typename T>
constexpr bool kMoveOnly = !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
                           std::is_nothrow_move_constructible_v<T> &&
                           std::is_nothrow_move_assignable_v<T>;
static_assert(kMoveOnly<Comm>);
static_assert(kMoveOnly<Stream>);
static_assert(kMoveOnly<PreMulSumOp>);
static_assert(sizeof(Comm) == sizeof(chorusComm_t));
static_assert(sizeof(Stream) == sizeof(chorusStream_t));
static_assert(!std::is_constructible_v<Comm, Stream>);
static_assert(!std::is_convertible_v<chorusComm_t, Comm>);  // adoption is explicit

// A group is a scope: neither copyable nor movable.
static_assert(!std::is_copy_constructible_v<Group> && !std::is_move_constructible_v<Group>);

// Calls return chorusResult_t; typed forms pick the datatype from T.
static_assert(std::is_same_v<decltype(std::declval<const Comm&>().AllReduce(
                                 static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                                 size_t{1}, chorusSum)),
                             chorusResult_t>);
static_assert(std::is_same_v<decltype(std::declval<const Comm&>().Broadcast(
                                 static_cast<const void*>(nullptr), static_cast<void*>(nullptr),
                                 size_t{1}, chorusInt8, 0, static_cast<chorusStream_t>(nullptr))),
                             chorusResult_t>);
static_assert(std::is_same_v<decltype(Comm::InitAll(2, nullptr)), chorusResult_t>);
static_assert(std::is_same_v<decltype(std::declval<Group&>().End()), chorusResult_t>);

TEST(ChorusHppTest, DataTypeOfIsUsableAtRunTime) {
  EXPECT_EQ(DataTypeOf<float>(), chorusFloat32);
  EXPECT_EQ(DataTypeOf<uint64_t>(), chorusUint64);
}

}  // namespace
