#include "examples/trainer/idx_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace trainer {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr uint64_t kMaxValues = uint64_t{1} << 32;  // far above any real data set

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `length` bytes or fails with what was found.
chorus::Status ReadExactly(gzFile file, const std::string& path, void* buffer, size_t length, const char* what) {
  size_t done = 0;
  auto* bytes = static_cast<uint8_t*>(buffer);
  while (done < length) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(length - done, 1u << 30));
    const int got = gzread(file, bytes + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      return chorus::InvalidArgument(path, ": cannot read ", what, ": ", message);
    }
    if (got == 0) {
      return chorus::InvalidArgument(path, ": truncated IDX file: ", what, " needs ", length, " bytes, found ",
                                     done);
    }
    done += static_cast<size_t>(got);
  }
  return chorus::Status::Ok();
}

}  // namespace

chorus::Status ReadIdxFile(const std::string& path, IdxArray* out) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return chorus::InvalidArgument("cannot open ", path, ": ", errno != 0 ? std::strerror(errno) : "gzopen failed");
  }
  uint8_t magic[4];
  CHORUS_RETURN_IF_ERROR(ReadExactly(file.get(), path, magic, sizeof magic, "the magic number"));
  if (magic[0] != 0 || magic[1] != 0) {
    return chorus::InvalidArgument(path, ": not an IDX file (magic starts with ", int{magic[0]}, ", ",
                                   int{magic[1]}, ", expected 0, 0)");
  }
  if (magic[2] != kUnsignedByte) {
    return chorus::InvalidArgument(path, ": IDX data type 0x", std::hex, int{magic[2]},
                                   " is not supported (only unsigned bytes, 0x08)");
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > 4) {
    return chorus::InvalidArgument(path, ": IDX file with ", ndims, " dimensions (expected 1 to 4)");
  }
  IdxArray array;
  uint64_t total = 1;
  for (int d = 0; d < ndims; ++d) {
    uint8_t be[4];
    CHORUS_RETURN_IF_ERROR(ReadExactly(file.get(), path, be, sizeof be, "a dimension"));
    const uint32_t dim = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) | (uint32_t{be[2]} << 8) | be[3];
    total *= dim;
    if (total > kMaxValues) return chorus::InvalidArgument(path, ": IDX dimensions too large");
    array.dims.push_back(dim);
  }
  array.values.resize(total);
  CHORUS_RETURN_IF_ERROR(ReadExactly(file.get(), path, array.values.data(), total, "the data"));
  uint8_t extra;
  if (gzread(file.get(), &extra, 1) > 0) {
    return chorus::InvalidArgument(path, ": IDX file has bytes after its ", total, " values");
  }
  *out = std::move(array);
  return chorus::Status::Ok();
}

}  // namespace trainer
