/*
 * Chorus C++ wrapper: header-only RAII classes over the C API in chorus.h.
 *
 *   std::vector<chorus::cpp::Comm> comms;
 *   if (chorus::cpp::Comm::InitAll(4, &comms) != chorusSuccess) ...
 *   chorus::cpp::Stream stream;
 *   if (chorus::cpp::Stream::Create(&stream) != chorusSuccess) ...
 *   chorusResult_t r = comms[0].AllReduce(send, recv, n, chorusSum, stream.get());
 *
 * Nothing here throws: every call returns the chorusResult_t of the C call
 * and is [[nodiscard]]. Owning classes are move-only and release their handle
 * in the destructor (a destructor cannot report errors: call Destroy() or
 * Synchronize() first where the result matters).
 *
 * The classes live in chorus::cpp so that they never collide with the
 * library's internal chorus:: names. Requires C++17.
 */
#ifndef CHORUS_CHORUS_HPP_
#define CHORUS_CHORUS_HPP_

#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "chorus/chorus.h"

namespace chorus {
namespace cpp {

/** Storage type of one fp16 element (raw IEEE binary16 bits). */
struct Float16 {
  uint16_t bits;
};
/** Storage type of one bfloat16 element (upper 16 bits of a float32). */
struct Bfloat16 {
  uint16_t bits;
};

namespace detail {
template <typename T>
struct DataTypeTraits {
  static constexpr bool kKnown = false;
  static constexpr chorusDataType_t kType = chorusNumTypes;
};
template <chorusDataType_t kValue>
struct KnownType {
  static constexpr bool kKnown = true;
  static constexpr chorusDataType_t kType = kValue;
};
// Integers map by width and signedness, so int64_t, long and long long all
// work whatever the platform's typedefs are. bool is not a number here.
template <typename T, bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct IntegerType : DataTypeTraits<void> {};
template <typename T>
struct IntegerType<T, true> {
  static constexpr bool kKnown = sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8;
  static constexpr chorusDataType_t kType =
      sizeof(T) == 1   ? (std::is_signed_v<T> ? chorusInt8 : chorusUint8)
      : sizeof(T) == 4 ? (std::is_signed_v<T> ? chorusInt32 : chorusUint32)
      : sizeof(T) == 8 ? (std::is_signed_v<T> ? chorusInt64 : chorusUint64)
                       : chorusNumTypes;
};
template <typename T>
struct ElementType : IntegerType<T> {};
template <> struct ElementType<float> : KnownType<chorusFloat32> {};
template <> struct ElementType<double> : KnownType<chorusFloat64> {};
template <> struct ElementType<Float16> : KnownType<chorusFloat16> {};
template <> struct ElementType<Bfloat16> : KnownType<chorusBfloat16> {};
}  // namespace detail

/** True when T has a chorusDataType_t (cv-qualifiers ignored). */
template <typename T>
inline constexpr bool kIsChorusElement = detail::ElementType<std::remove_cv_t<T>>::kKnown;

/** The chorusDataType_t of element type T, e.g. DataTypeOf<float>() == chorusFloat32. */
template <typename T>
constexpr chorusDataType_t DataTypeOf() {
  static_assert(kIsChorusElement<T>, "T has no chorusDataType_t");
  return detail::ElementType<std::remove_cv_t<T>>::kType;
}

/** Owns a host stream (chorusStreamCreate); destroys it on destruction. */
class Stream {
 public:
  Stream() = default;
  /** Adopts `stream`, which this object will destroy. */
  explicit Stream(chorusStream_t stream) noexcept : stream_(stream) {}
  ~Stream() { Reset(); }
  Stream(Stream&& other) noexcept : stream_(other.Release()) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      Reset();
      stream_ = other.Release();
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /** Creates a stream into *out (replacing what it held). */
  [[nodiscard]] static chorusResult_t Create(Stream* out) {
    chorusStream_t stream = nullptr;
    const chorusResult_t result = chorusStreamCreate(&stream);
    if (result == chorusSuccess) *out = Stream(stream);
    return result;
  }

  [[nodiscard]] chorusResult_t Synchronize() const { return chorusStreamSynchronize(stream_); }
  [[nodiscard]] chorusResult_t Query() const { return chorusStreamQuery(stream_); }
  /** Waits for pending work and frees the stream now, returning the result. */
  [[nodiscard]] chorusResult_t Destroy() {
    return stream_ ? chorusStreamDestroy(Release()) : chorusSuccess;
  }

  chorusStream_t get() const noexcept { return stream_; }
  /** Gives up ownership without destroying. */
  chorusStream_t Release() noexcept { return std::exchange(stream_, nullptr); }
  explicit operator bool() const noexcept { return stream_ != nullptr; }

 private:
  void Reset() noexcept {
    if (stream_) (void)chorusStreamDestroy(Release());
  }
  chorusStream_t stream_ = nullptr;
};

/** Owns a communicator; destroys it (after pending work) on destruction. */
class Comm {
 public:
  Comm() = default;
  /** Adopts `comm`, which this object will destroy. */
  explicit Comm(chorusComm_t comm) noexcept : comm_(comm) {}
  ~Comm() { Reset(); }
  Comm(Comm&& other) noexcept : comm_(other.Release()) {}
  Comm& operator=(Comm&& other) noexcept {
    if (this != &other) {
      Reset();
      comm_ = other.Release();
    }
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // ---- Creation ---------------------------------------------------------

  /** chorusCommInitRank / chorusCommInitRankConfig (config may be null). */
  [[nodiscard]] static chorusResult_t InitRank(Comm* out, int nranks, const chorusUniqueId& id,
                                               int rank, chorusConfig_t* config = nullptr) {
    chorusComm_t comm = nullptr;
    const chorusResult_t result = chorusCommInitRankConfig(&comm, nranks, id, rank, config);
    if (result == chorusSuccess) *out = Comm(comm);
    return result;
  }

  /** chorusCommInitAll: `ndev` ranks as threads of this process. */
  [[nodiscard]] static chorusResult_t InitAll(int ndev, std::vector<Comm>* out) {
    if (ndev < 0) return chorusInvalidArgument;
    std::vector<chorusComm_t> raw(static_cast<size_t>(ndev), nullptr);
    const chorusResult_t result = chorusCommInitAll(raw.data(), ndev, nullptr);
    if (result != chorusSuccess) return result;
    out->clear();
    out->reserve(raw.size());
    for (chorusComm_t comm : raw) out->emplace_back(comm);
    return result;
  }

  /** chorusCommInitFromEnv (mpirun / srun / torchrun environment). */
  [[nodiscard]] static chorusResult_t InitFromEnv(Comm* out, chorusConfig_t* config = nullptr) {
    chorusComm_t comm = nullptr;
    const chorusResult_t result = chorusCommInitFromEnv(&comm, config);
    if (result == chorusSuccess) *out = Comm(comm);
    return result;
  }

  /** chorusCommSplit; *out is empty on ranks passing CHORUS_SPLIT_NOCOLOR. */
  [[nodiscard]] chorusResult_t Split(int color, int key, Comm* out,
                                     chorusConfig_t* config = nullptr) const {
    chorusComm_t comm = nullptr;
    const chorusResult_t result = chorusCommSplit(comm_, color, key, &comm, config);
    if (result == chorusSuccess) *out = Comm(comm);
    return result;
  }

  /** chorusCommShrink(Config): a new communicator over the surviving ranks. */
  [[nodiscard]] chorusResult_t Shrink(Comm* out, chorusConfig_t* config = nullptr) const {
    chorusComm_t comm = nullptr;
    const chorusResult_t result = chorusCommShrinkConfig(comm_, &comm, config);
    if (result == chorusSuccess) *out = Comm(comm);
    return result;
  }

  /** chorusCommRevoke: every rank's operations on this communicator fail
   *  with chorusRevoked (then Shrink, Abort or Destroy). */
  [[nodiscard]] chorusResult_t Revoke() const { return chorusCommRevoke(comm_); }

  // ---- Management -------------------------------------------------------

  [[nodiscard]] chorusResult_t Rank(int* rank) const { return chorusCommUserRank(comm_, rank); }
  [[nodiscard]] chorusResult_t Size(int* size) const { return chorusCommCount(comm_, size); }
  [[nodiscard]] chorusResult_t Finalize() const { return chorusCommFinalize(comm_); }
  [[nodiscard]] chorusResult_t AsyncError(chorusResult_t* error) const {
    return chorusCommGetAsyncError(comm_, error);
  }
  /** chorusCommDumpTrace: the flight recorder to `path` (NULL: CHORUS_TRACE_FILE). */
  [[nodiscard]] chorusResult_t DumpTrace(const char* path = nullptr) const { return chorusCommDumpTrace(comm_, path); }
  /** Message of the last error on this communicator ("" if none). */
  const char* LastError() const { return chorusGetLastError(comm_); }
  /** Frees the communicator now (waiting for pending work). */
  [[nodiscard]] chorusResult_t Destroy() {
    return comm_ ? chorusCommDestroy(Release()) : chorusSuccess;
  }
  /** chorusCommAbort: fails pending work quickly and frees the communicator. */
  [[nodiscard]] chorusResult_t Abort() {
    return comm_ ? chorusCommAbort(Release()) : chorusSuccess;
  }

  chorusComm_t get() const noexcept { return comm_; }
  /** Gives up ownership without destroying. */
  chorusComm_t Release() noexcept { return std::exchange(comm_, nullptr); }
  explicit operator bool() const noexcept { return comm_ != nullptr; }

  // ---- Collectives: raw forms (any datatype) ----------------------------

  [[nodiscard]] chorusResult_t AllReduce(const void* send, void* recv, size_t count,
                                         chorusDataType_t dtype, chorusRedOp_t op,
                                         chorusStream_t stream = nullptr) const {
    return chorusAllReduce(send, recv, count, dtype, op, comm_, stream);
  }
  [[nodiscard]] chorusResult_t Broadcast(const void* send, void* recv, size_t count,
                                         chorusDataType_t dtype, int root,
                                         chorusStream_t stream = nullptr) const {
    return chorusBroadcast(send, recv, count, dtype, root, comm_, stream);
  }
  [[nodiscard]] chorusResult_t Reduce(const void* send, void* recv, size_t count,
                                      chorusDataType_t dtype, chorusRedOp_t op, int root,
                                      chorusStream_t stream = nullptr) const {
    return chorusReduce(send, recv, count, dtype, op, root, comm_, stream);
  }
  [[nodiscard]] chorusResult_t AllGather(const void* send, void* recv, size_t send_count,
                                         chorusDataType_t dtype,
                                         chorusStream_t stream = nullptr) const {
    return chorusAllGather(send, recv, send_count, dtype, comm_, stream);
  }
  [[nodiscard]] chorusResult_t ReduceScatter(const void* send, void* recv, size_t recv_count,
                                             chorusDataType_t dtype, chorusRedOp_t op,
                                             chorusStream_t stream = nullptr) const {
    return chorusReduceScatter(send, recv, recv_count, dtype, op, comm_, stream);
  }
  [[nodiscard]] chorusResult_t AlltoAll(const void* send, void* recv, size_t count,
                                        chorusDataType_t dtype,
                                        chorusStream_t stream = nullptr) const {
    return chorusAlltoAll(send, recv, count, dtype, comm_, stream);
  }
  [[nodiscard]] chorusResult_t Gather(const void* send, void* recv, size_t send_count,
                                      chorusDataType_t dtype, int root,
                                      chorusStream_t stream = nullptr) const {
    return chorusGather(send, recv, send_count, dtype, root, comm_, stream);
  }
  [[nodiscard]] chorusResult_t Scatter(const void* send, void* recv, size_t recv_count,
                                       chorusDataType_t dtype, int root,
                                       chorusStream_t stream = nullptr) const {
    return chorusScatter(send, recv, recv_count, dtype, root, comm_, stream);
  }
  [[nodiscard]] chorusResult_t Send(const void* send, size_t count, chorusDataType_t dtype,
                                    int peer, chorusStream_t stream = nullptr) const {
    return chorusSend(send, count, dtype, peer, comm_, stream);
  }
  [[nodiscard]] chorusResult_t Recv(void* recv, size_t count, chorusDataType_t dtype, int peer,
                                    chorusStream_t stream = nullptr) const {
    return chorusRecv(recv, count, dtype, peer, comm_, stream);
  }

  // ---- Collectives: typed forms (datatype from T) -----------------------

  template <typename T>
  [[nodiscard]] chorusResult_t AllReduce(const T* send, T* recv, size_t count, chorusRedOp_t op,
                                         chorusStream_t stream = nullptr) const {
    return AllReduce(send, recv, count, DataTypeOf<T>(), op, stream);
  }
  template <typename T>
  [[nodiscard]] chorusResult_t Broadcast(const T* send, T* recv, size_t count, int root,
                                         chorusStream_t stream = nullptr) const {
    return Broadcast(send, recv, count, DataTypeOf<T>(), root, stream);
  }
  template <typename T>
  [[nodiscard]] chorusResult_t Reduce(const T* send, T* recv, size_t count, chorusRedOp_t op,
                                      int root, chorusStream_t stream = nullptr) const {
    return Reduce(send, recv, count, DataTypeOf<T>(), op, root, stream);
  }
  template <typename T>
  [[nodiscard]] chorusResult_t AllGather(const T* send, T* recv, size_t send_count,
                                         chorusStream_t stream = nullptr) const {
    return AllGather(send, recv, send_count, DataTypeOf<T>(), stream);
  }
  template <typename T>
  [[nodiscard]] chorusResult_t ReduceScatter(const T* send, T* recv, size_t recv_count,
                                             chorusRedOp_t op,
                                             chorusStream_t stream = nullptr) const {
    return ReduceScatter(send, recv, recv_count, DataTypeOf<T>(), op, stream);
  }
  template <typename T>
  [[nodiscard]] chorusResult_t Send(const T* send, size_t count, int peer,
                                    chorusStream_t stream = nullptr) const {
    return Send(send, count, DataTypeOf<T>(), peer, stream);
  }
  template <typename T>
  [[nodiscard]] chorusResult_t Recv(T* recv, size_t count, int peer,
                                    chorusStream_t stream = nullptr) const {
    return Recv(recv, count, DataTypeOf<T>(), peer, stream);
  }

 private:
  void Reset() noexcept {
    if (comm_) (void)chorusCommDestroy(Release());
  }
  chorusComm_t comm_ = nullptr;
};

/**
 * Scoped group call: GroupStart in the constructor, GroupEnd at End() or in
 * the destructor. Check start_result() before issuing operations, and call
 * End() to learn whether the fused launch succeeded.
 */
class Group {
 public:
  Group() : start_result_(chorusGroupStart()), open_(start_result_ == chorusSuccess) {}
  ~Group() {
    if (open_) (void)chorusGroupEnd();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  Group(Group&&) = delete;
  Group& operator=(Group&&) = delete;

  [[nodiscard]] chorusResult_t start_result() const noexcept { return start_result_; }
  /** Ends the group once; later calls return chorusInvalidUsage. */
  [[nodiscard]] chorusResult_t End() {
    if (!open_) return start_result_ == chorusSuccess ? chorusInvalidUsage : start_result_;
    open_ = false;
    return chorusGroupEnd();
  }

 private:
  chorusResult_t start_result_;
  bool open_;
};

/** Owns a PreMulSum reduction op (chorusRedOpCreatePreMulSum) of one comm. */
class PreMulSumOp {
 public:
  PreMulSumOp() = default;
  ~PreMulSumOp() { Reset(); }
  PreMulSumOp(PreMulSumOp&& other) noexcept
      : op_(other.op_), comm_(std::exchange(other.comm_, nullptr)) {}
  PreMulSumOp& operator=(PreMulSumOp&& other) noexcept {
    if (this != &other) {
      Reset();
      op_ = other.op_;
      comm_ = std::exchange(other.comm_, nullptr);
    }
    return *this;
  }
  PreMulSumOp(const PreMulSumOp&) = delete;
  PreMulSumOp& operator=(const PreMulSumOp&) = delete;

  /** `scalar` has type `dtype`; `comm` must outlive the op. */
  [[nodiscard]] static chorusResult_t Create(PreMulSumOp* out, void* scalar,
                                             chorusDataType_t dtype,
                                             chorusScalarResidence_t residence,
                                             const Comm& comm) {
    chorusRedOp_t op = chorusSum;
    const chorusResult_t result =
        chorusRedOpCreatePreMulSum(&op, scalar, dtype, residence, comm.get());
    if (result == chorusSuccess) {
      PreMulSumOp created;
      created.op_ = op;
      created.comm_ = comm.get();
      *out = std::move(created);
    }
    return result;
  }

  chorusRedOp_t get() const noexcept { return op_; }
  explicit operator bool() const noexcept { return comm_ != nullptr; }

 private:
  void Reset() noexcept {
    if (comm_) (void)chorusRedOpDestroy(op_, std::exchange(comm_, nullptr));
  }
  chorusRedOp_t op_ = chorusSum;
  chorusComm_t comm_ = nullptr;
};

}  // namespace cpp

// The type mapping is useful beyond the wrapper classes, so it is also
// available as chorus::DataTypeOf.
using cpp::DataTypeOf;

}  // namespace chorus

#endif  // CHORUS_CHORUS_HPP_
