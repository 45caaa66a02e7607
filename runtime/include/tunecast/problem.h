// A problem as named integer fields, the vocabulary shared by feature encodings, constraints, the
// CLI's --problem option and the timing and perf-DB readers. Which fields exist is a kernel's
// problem schema (ProblemSchema below): MIOpen's convolution problem, built in (ProblemField), or
// the fields a kernel definition declares (docs/kernels.md), carried by the model. The built-in
// field table is part of the artifact format: constraint bytecode refers to fields by index, so
// new fields are only appended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tunecast/status.h"

namespace tunecast {

enum class ProblemField : int {
  kDir = 0,     // F, B, W (forward, backward data, backward weights)
  kDtype,       // FP32, FP16, BF16, INT8
  kLayout,      // NCHW, NHWC, NCDHW, NDHWC
  kN,           // batch size
  kC,           // config.in_channels (for B/W rows: channels of the tensor the kernel reads)
  kK,           // config.out_channels
  kH,           // in_h
  kW,           // in_w
  kD,           // in_d
  kY,           // filter height
  kX,           // filter width
  kZ,           // filter depth
  kPadH,
  kPadW,
  kPadD,
  kStrideH,
  kStrideW,
  kStrideD,
  kDilH,
  kDilW,
  kDilD,
  kG,           // group count
  kBias,
  kSpatialDim,
  kArch,        // the GPU architecture (arch_code below): lets one model serve several GPUs
  kCount,
};

constexpr int kProblemFieldCount = static_cast<int>(ProblemField::kCount);
// Fields of any problem schema (a definition declares at most this many).
constexpr int kMaxProblemFields = 32;
static_assert(kProblemFieldCount <= kMaxProblemFields, "the convolution problem fits every schema's limit");
// The longest name of a schema's field or enumeration symbol.
constexpr int kMaxProblemNameLength = 64;

// Symbolic values of the enumerated fields.
enum Direction : int64_t { kForward = 0, kBackwardData = 1, kBackwardWeights = 2 };
enum DataType : int64_t { kFp32 = 0, kFp16 = 1, kBf16 = 2, kInt8 = 3 };
enum Layout : int64_t { kNchw = 0, kNhwc = 1, kNcdhw = 2, kNdhwc = 3 };
// Architectures: any name (ROCm's gfx1100, gfx90a, gfx10-3-generic, or another GPU's such as
// h100) has an integer code, a function of the name alone, so encodings and rules compare
// `arch == gfx1100` as integers and a model needs no table of them. The six names MIOpen's perf
// DBs of format versions 1 and 2 know keep their codes 0..5 (below); every other name's code is
// kArchNameCodeBase + a packing of its letters (arch_code), so it can be printed back. Which
// architectures a model covers is in the model (Model::covers_arch).
enum Arch : int64_t { kGfx900 = 0, kGfx906 = 1, kGfx908 = 2, kGfx90a = 3, kGfx942 = 4, kGfx1030 = 5 };
constexpr int64_t kArchNameCodeBase = 64;
// The longest name arch_code packs: at most 11 characters besides a leading "gfx" and a trailing
// "-generic" (gfx10-3-generic, gfx1201, mi300x-oam...).
constexpr int kMaxArchNameLength = 24;

// Field i's value is values[i], i an index of the problem's schema (ProblemField for the built-in
// convolution problem).
struct Problem {
  int64_t values[kMaxProblemFields] = {};
  uint32_t present = 0;  // bit i: field i was set explicitly

  void set(int field, int64_t value) {
    values[field] = value;
    present |= 1u << field;
  }
  int64_t get(int field) const { return values[field]; }
  bool has(int field) const { return (present >> field) & 1u; }
  void set(ProblemField field, int64_t value) { set(static_cast<int>(field), value); }
  int64_t get(ProblemField field) const { return get(static_cast<int>(field)); }
  bool has(ProblemField field) const { return has(static_cast<int>(field)); }
};

// Canonical name of a field ("n", "stride_h"...).
const char* problem_field_name(ProblemField field);

// Looks a field up by name or alias (MIOpen's driver letters p/q pads, u/v strides, l/j
// dilations, and group, batch, direction, precision).
// Returns false if unknown.
bool find_problem_field(std::string_view name, ProblemField* field);

// Looks up a symbolic value ("F", "FP16", "NCHW", "gfx906") of an enumerated field. Returns false if unknown.
// For kArch every architecture name arch_code accepts is known.
bool find_problem_symbol(ProblemField field, std::string_view symbol, int64_t* value);

// Name of a symbolic value for printing, or nullptr when the field is numeric (or the value names
// nothing). An architecture outside the six fixed names is decoded into a small per-thread ring of
// buffers: the pointer stays valid for the next 3 calls on the thread (format_arch has no limit).
const char* problem_symbol_name(ProblemField field, int64_t value);

// The code of an architecture name: ":feature" suffixes, each a name and '+' or '-', are checked
// and dropped ("gfx90a:sramecc+:xnack-" is gfx90a; "gfx906:bogus" is refused), letters are lower-cased; the name must be letters, digits and '-', at most 11 of them
// besides a leading "gfx" and a trailing "-generic". Returns false for anything else (an empty
// name included). Every such name has a code: whether a model covers it is the model's business.
bool arch_code(std::string_view name, int64_t* code);

// Writes the name of an architecture code (at most kMaxArchNameLength characters and a NUL) into
// `buffer`; returns false, writing "", when `code` names no architecture.
bool format_arch(int64_t code, char* buffer, size_t size);

// Fills the conventional defaults of fields not set yet: spatial_dim 2, layout NCHW, depth 1, pads
// 0, strides 1, dilations 1, group 1, bias 0; the depth stride and dilation are 1 in 3-D and 0 in
// 2-D, as MIOpen keys 2-D problems. Fields with no safe default (dir, dtype, n, c, k, h, w, y, x)
// stay unset.
void apply_problem_defaults(Problem* problem);

// Parses "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1" (spaces allowed, ',' or ';' or
// whitespace as separators). Unknown names, bad numbers, repeated fields, an empty text, sizes,
// strides, dilations or groups below 1 and a spatial_dim other than 2 or 3 are errors. Defaults
// are applied afterwards.
Status parse_problem(std::string_view text, Problem* problem);

// Writes "dir=F,dtype=FP32,..." for every present field. Returns the length (snprintf semantics).
int format_problem(const Problem& problem, char* buffer, size_t size);

// ---------------------------------------------------------------------------------------------
// Problem schemas: which fields a kernel's problem has (docs/kernels.md).

namespace schema {
struct ProblemSchema;
}

enum class FieldKind : uint8_t {
  kInteger = 0,       // an int64 in [min, max]
  kEnumeration = 1,   // symbol i has value i
  kArchitecture = 2,  // any architecture name (arch_code)
};

// A read-only view of a problem schema: the built-in convolution problem (default constructed), or
// a model's ProblemSchema table (verified at load: Model::problem_schema()). Copyable, no heap.
class ProblemSchema {
 public:
  ProblemSchema() = default;
  // `table` must have passed verify_problem_schema (Model::load does); null: the convolution.
  explicit ProblemSchema(const schema::ProblemSchema* table) : table_(table) {}

  bool builtin() const { return table_ == nullptr; }
  const schema::ProblemSchema* table() const { return table_; }
  int field_count() const;
  const char* field_name(int field) const;
  FieldKind field_kind(int field) const;
  // By canonical name (and, for the convolution, MIOpen's aliases). False if unknown.
  bool find_field(std::string_view name, int* field) const;
  // A symbolic value of an enumerated or architecture field. False if the field takes no such value.
  bool find_symbol(int field, std::string_view symbol, int64_t* value) const;
  // The symbol of a value (decoded architectures as problem_symbol_name), or nullptr for numbers.
  const char* symbol_name(int field, int64_t value) const;
  int symbol_count(int field) const;  // an enumeration's symbols (0 for other kinds)
  bool has_default(int field) const;
  int64_t default_value(int field) const;
  int64_t min_value(int field) const;  // the integer range; every int64 for the other kinds
  int64_t max_value(int field) const;

 private:
  const schema::ProblemSchema* table_ = nullptr;
};

// Checks an untrusted schema table: 1..kMaxProblemFields fields, names [A-Za-z_][A-Za-z0-9_]*
// unique, known kinds, min <= max, enumerations of 1..64 symbols, defaults inside the field.
Status verify_problem_schema(const schema::ProblemSchema* table);

// Parses `name=value` items (',', ';' or whitespace between them) into the schema's fields, then
// fills the defaults of the fields not given. Unknown names, repeated fields, a value outside the
// field's range or enumeration, and a required field (no default) left unset are errors naming the
// field; an empty text is the problem of every default. The built-in schema parses as
// parse_problem(text, problem) below.
Status parse_problem(const ProblemSchema& schema, std::string_view text, Problem* problem);

// "m=4096,n=4096,dtype=FP16,arch=h100": every present field in schema order, symbols by name (the
// canonical text of docs/kernels.md). snprintf semantics.
int format_problem(const ProblemSchema& schema, const Problem& problem, char* buffer, size_t size);

}  // namespace tunecast
