#include "interpose/mpi/type_map.h"

#include <vector>

namespace chorus_mpi {
namespace {

// What an element is; with its size (asked from MPI, so MPI_LONG and
// MPI_INTEGER get what this build has) it picks the Chorus element type.
enum class Kind { kSigned, kUnsigned, kFloat, kComplex, kBytesOnly };

struct Candidate {
  MPI_Datatype type;
  const char* name;
  Kind kind;
};

#define CHORUS_MPI_TYPE(handle, kind) {handle, #handle, Kind::kind}

// Every predefined datatype the interposer knows. Pair types (MPI_FLOAT_INT,
// ...) are left out: they are for MINLOC/MAXLOC and some have holes.
const Candidate kCandidates[] = {
    CHORUS_MPI_TYPE(MPI_FLOAT, kFloat),
    CHORUS_MPI_TYPE(MPI_DOUBLE, kFloat),
    CHORUS_MPI_TYPE(MPI_INT, kSigned),
    CHORUS_MPI_TYPE(MPI_UNSIGNED, kUnsigned),
    CHORUS_MPI_TYPE(MPI_LONG, kSigned),
    CHORUS_MPI_TYPE(MPI_UNSIGNED_LONG, kUnsigned),
    CHORUS_MPI_TYPE(MPI_LONG_LONG, kSigned),
    CHORUS_MPI_TYPE(MPI_LONG_LONG_INT, kSigned),
    CHORUS_MPI_TYPE(MPI_UNSIGNED_LONG_LONG, kUnsigned),
    CHORUS_MPI_TYPE(MPI_INT8_T, kSigned),
    CHORUS_MPI_TYPE(MPI_UINT8_T, kUnsigned),
    CHORUS_MPI_TYPE(MPI_INT32_T, kSigned),
    CHORUS_MPI_TYPE(MPI_UINT32_T, kUnsigned),
    CHORUS_MPI_TYPE(MPI_INT64_T, kSigned),
    CHORUS_MPI_TYPE(MPI_UINT64_T, kUnsigned),
    CHORUS_MPI_TYPE(MPI_SIGNED_CHAR, kSigned),
    CHORUS_MPI_TYPE(MPI_UNSIGNED_CHAR, kUnsigned),
    CHORUS_MPI_TYPE(MPI_AINT, kSigned),
    CHORUS_MPI_TYPE(MPI_OFFSET, kSigned),
    CHORUS_MPI_TYPE(MPI_COUNT, kSigned),
    CHORUS_MPI_TYPE(MPI_C_FLOAT_COMPLEX, kComplex),
    CHORUS_MPI_TYPE(MPI_C_DOUBLE_COMPLEX, kComplex),
    // No 16-bit integers, bool or characters in Chorus: data movement only.
    CHORUS_MPI_TYPE(MPI_INT16_T, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_UINT16_T, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_SHORT, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_UNSIGNED_SHORT, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_CHAR, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_WCHAR, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_BYTE, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_PACKED, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_C_BOOL, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_LONG_DOUBLE, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_C_LONG_DOUBLE_COMPLEX, kBytesOnly),
    // Fortran, for mpif.h / use mpi programs (sizes as this build has them).
    CHORUS_MPI_TYPE(MPI_INTEGER, kSigned),
    CHORUS_MPI_TYPE(MPI_INTEGER1, kSigned),
    CHORUS_MPI_TYPE(MPI_INTEGER4, kSigned),
    CHORUS_MPI_TYPE(MPI_INTEGER8, kSigned),
    CHORUS_MPI_TYPE(MPI_REAL, kFloat),
    CHORUS_MPI_TYPE(MPI_REAL4, kFloat),
    CHORUS_MPI_TYPE(MPI_REAL8, kFloat),
    CHORUS_MPI_TYPE(MPI_DOUBLE_PRECISION, kFloat),
    CHORUS_MPI_TYPE(MPI_COMPLEX, kComplex),
    CHORUS_MPI_TYPE(MPI_DOUBLE_COMPLEX, kComplex),
    CHORUS_MPI_TYPE(MPI_INTEGER2, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_LOGICAL, kBytesOnly),
    CHORUS_MPI_TYPE(MPI_CHARACTER, kBytesOnly),
};

#undef CHORUS_MPI_TYPE

struct OpEntry {
  MPI_Op op;
  const char* name;
  bool served;
  chorusRedOp_t chorus;
};

const OpEntry kOps[] = {
    {MPI_SUM, "MPI_SUM", true, chorusSum},      {MPI_PROD, "MPI_PROD", true, chorusProd},
    {MPI_MIN, "MPI_MIN", true, chorusMin},      {MPI_MAX, "MPI_MAX", true, chorusMax},
    {MPI_LAND, "MPI_LAND", false, chorusSum},   {MPI_BAND, "MPI_BAND", false, chorusSum},
    {MPI_LOR, "MPI_LOR", false, chorusSum},     {MPI_BOR, "MPI_BOR", false, chorusSum},
    {MPI_LXOR, "MPI_LXOR", false, chorusSum},   {MPI_BXOR, "MPI_BXOR", false, chorusSum},
    {MPI_MINLOC, "MPI_MINLOC", false, chorusSum}, {MPI_MAXLOC, "MPI_MAXLOC", false, chorusSum},
    {MPI_REPLACE, "MPI_REPLACE", false, chorusSum}, {MPI_NO_OP, "MPI_NO_OP", false, chorusSum},
};

bool ChorusElement(Kind kind, size_t size, chorusDataType_t* type, int* lanes) {
  *lanes = 1;
  switch (kind) {
    case Kind::kSigned:
      if (size == 1) *type = chorusInt8;
      else if (size == 4) *type = chorusInt32;
      else if (size == 8) *type = chorusInt64;
      else return false;
      return true;
    case Kind::kUnsigned:
      if (size == 1) *type = chorusUint8;
      else if (size == 4) *type = chorusUint32;
      else if (size == 8) *type = chorusUint64;
      else return false;
      return true;
    case Kind::kFloat:
      if (size == 4) *type = chorusFloat32;
      else if (size == 8) *type = chorusFloat64;
      else return false;
      return true;
    case Kind::kComplex:
      *lanes = 2;
      if (size == 8) *type = chorusFloat32;
      else if (size == 16) *type = chorusFloat64;
      else return false;
      return true;
    case Kind::kBytesOnly:
      return false;
  }
  return false;
}

// Only predefined, contiguous types of non-zero size make it into the table
// (a Fortran type this build lacks has size 0).
bool Describe(const Candidate& candidate, TypeInfo* info) {
  if (candidate.type == MPI_DATATYPE_NULL) return false;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size(candidate.type, &size) != MPI_SUCCESS || size <= 0) return false;
  if (PMPI_Type_get_extent(candidate.type, &lb, &extent) != MPI_SUCCESS) return false;
  if (PMPI_Type_get_true_extent(candidate.type, &true_lb, &true_extent) != MPI_SUCCESS) return false;
  if (lb != 0 || true_lb != 0 || extent != size || true_extent != size) return false;
  info->name = candidate.name;
  info->size = static_cast<size_t>(size);
  info->reducible = ChorusElement(candidate.kind, info->size, &info->chorus, &info->lanes);
  info->sum_only = candidate.kind == Kind::kComplex;
  return true;
}

struct Entry {
  MPI_Datatype type;
  TypeInfo info;
};

// The predefined types in kCandidates order (the common ones first), built
// at the first lookup (after MPI_Init). A function-local static, not
// std::call_once: every served call looks types up, and libstdc++'s
// call_once writes two thread-locals before it even checks the flag.
const std::vector<Entry>& Table() {
  static const std::vector<Entry>* table = [] {
    auto* entries = new std::vector<Entry>();  // never destroyed: used until exit
    for (const Candidate& candidate : kCandidates) {
      Entry entry{candidate.type, TypeInfo{}};
      bool seen = false;  // first name wins (MPI_LONG_LONG_INT is MPI_LONG_LONG)
      for (const Entry& other : *entries) seen = seen || other.type == candidate.type;
      if (!seen && Describe(candidate, &entry.info)) entries->push_back(entry);
    }
    return entries;
  }();
  return *table;
}

}  // namespace

// A scan: a few dozen handles, the common types first, beats hashing here.
const TypeInfo* LookupType(MPI_Datatype type) {
  for (const Entry& entry : Table()) {
    if (entry.type == type) return &entry.info;
  }
  return nullptr;
}

const char* MapReduction(MPI_Datatype type, MPI_Op op, Reduction* out) {
  const OpEntry* op_entry = nullptr;
  for (const OpEntry& entry : kOps) {
    if (entry.op == op) {
      op_entry = &entry;
      break;
    }
  }
  if (op_entry == nullptr) return "user-defined op";
  if (!op_entry->served) return "op without a Chorus equivalent";
  const TypeInfo* info = LookupType(type);
  if (info == nullptr) return "derived or unsupported datatype";
  if (!info->reducible) return "datatype has no Chorus reduction type";
  if (info->sum_only && op != MPI_SUM) return "complex datatype with an op other than MPI_SUM";
  out->type = info->chorus;
  out->op = op_entry->chorus;
  out->lanes = info->lanes;
  return nullptr;
}

const char* OpName(MPI_Op op) {
  for (const OpEntry& entry : kOps) {
    if (entry.op == op) return entry.name;
  }
  return "user-defined op";
}

}  // namespace chorus_mpi
