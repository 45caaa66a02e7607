#include "tunecast/problem.h"

#include "tunecast/tunecast_model_generated.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tunecast {
namespace {

struct FieldName {
  const char* name;
  ProblemField field;
};

// Canonical names first (indexed by field), then aliases.
constexpr FieldName kFieldNames[] = {
    {"dir", ProblemField::kDir},         {"dtype", ProblemField::kDtype},
    {"layout", ProblemField::kLayout},   {"n", ProblemField::kN},
    {"c", ProblemField::kC},             {"k", ProblemField::kK},
    {"h", ProblemField::kH},             {"w", ProblemField::kW},
    {"d", ProblemField::kD},             {"y", ProblemField::kY},
    {"x", ProblemField::kX},             {"z", ProblemField::kZ},
    {"pad_h", ProblemField::kPadH},      {"pad_w", ProblemField::kPadW},
    {"pad_d", ProblemField::kPadD},      {"stride_h", ProblemField::kStrideH},
    {"stride_w", ProblemField::kStrideW}, {"stride_d", ProblemField::kStrideD},
    {"dil_h", ProblemField::kDilH},      {"dil_w", ProblemField::kDilW},
    {"dil_d", ProblemField::kDilD},      {"g", ProblemField::kG},
    {"bias", ProblemField::kBias},       {"spatial_dim", ProblemField::kSpatialDim},
    {"arch", ProblemField::kArch},
    // MIOpen driver letters and spelled-out forms.
    {"p", ProblemField::kPadH},          {"q", ProblemField::kPadW},
    {"u", ProblemField::kStrideH},       {"v", ProblemField::kStrideW},
    {"l", ProblemField::kDilH},          {"j", ProblemField::kDilW},
    {"group", ProblemField::kG},         {"batch", ProblemField::kN},
    {"direction", ProblemField::kDir},   {"precision", ProblemField::kDtype},
};
static_assert(sizeof(kFieldNames) / sizeof(kFieldNames[0]) >= kProblemFieldCount,
              "every field needs a canonical name");

struct Symbol {
  ProblemField field;
  const char* name;
  int64_t value;
};

constexpr Symbol kSymbols[] = {
    {ProblemField::kDir, "F", kForward},         {ProblemField::kDir, "B", kBackwardData},
    {ProblemField::kDir, "W", kBackwardWeights}, {ProblemField::kDtype, "FP32", kFp32},
    {ProblemField::kDtype, "FP16", kFp16},       {ProblemField::kDtype, "BF16", kBf16},
    {ProblemField::kDtype, "INT8", kInt8},       {ProblemField::kLayout, "NCHW", kNchw},
    {ProblemField::kLayout, "NHWC", kNhwc},      {ProblemField::kLayout, "NCDHW", kNcdhw},
    {ProblemField::kLayout, "NDHWC", kNdhwc},
};

// The architectures of format versions 1 and 2, with their fixed codes.
constexpr const char* kFixedArchs[] = {"gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030"};
constexpr int kFixedArchCount = sizeof kFixedArchs / sizeof kFixedArchs[0];

// Every other name: kArchNameCodeBase + flags * 38^11 + its (at most 11) remaining characters as
// base-38 digits, most significant first, padded with 0 (0-9 -> 1..10, a-z -> 11..36, '-' -> 37).
// flags bit 0: a leading "gfx" was dropped; bit 1: a trailing "-generic" was dropped.
constexpr int kArchPackedChars = 11;
constexpr int64_t kArchRadix = 38;
constexpr int64_t arch_radix_power(int n) { return n == 0 ? 1 : kArchRadix * arch_radix_power(n - 1); }
constexpr int64_t kArchPackedSpan = arch_radix_power(kArchPackedChars);
constexpr char kGfxPrefix[] = "gfx";
constexpr char kGenericSuffix[] = "-generic";

int arch_digit(char c) {
  if (c >= '0' && c <= '9') return 1 + (c - '0');
  if (c >= 'a' && c <= 'z') return 11 + (c - 'a');
  if (c == '-') return 37;
  return -1;
}

char arch_char(int digit) {
  if (digit >= 1 && digit <= 10) return static_cast<char>('0' + digit - 1);
  if (digit >= 11 && digit <= 36) return static_cast<char>('a' + digit - 11);
  return '-';
}

bool is_symbolic(ProblemField field) {
  return field == ProblemField::kDir || field == ProblemField::kDtype ||
         field == ProblemField::kLayout || field == ProblemField::kArch;
}

bool equals(std::string_view a, const char* b) {
  return a.size() == std::strlen(b) && std::memcmp(a.data(), b, a.size()) == 0;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Calls visit(name, value) for each `name=value` item of a problem text (',', ';' or whitespace
// between items), both trimmed; stops at the first error, its own or visit's.
template <typename Visit>
Status for_each_item(std::string_view text, Visit visit) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = pos;
    while (end < text.size() && text[end] != ',' && text[end] != ';' && !is_space(text[end])) ++end;
    const std::string_view item = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::error(StatusCode::kInvalidArgument, "problem item '%.*s' is not name=value",
                           static_cast<int>(item.size()), item.data());
    }
    TUNECAST_RETURN_IF_ERROR(visit(trim(item.substr(0, eq)), trim(item.substr(eq + 1))));
  }
  return Status::ok();
}

}  // namespace

const char* problem_field_name(ProblemField field) {
  const int i = static_cast<int>(field);
  return (i >= 0 && i < kProblemFieldCount) ? kFieldNames[i].name : "?";
}

bool find_problem_field(std::string_view name, ProblemField* field) {
  for (const FieldName& f : kFieldNames) {
    if (equals(name, f.name)) {
      *field = f.field;
      return true;
    }
  }
  return false;
}

bool arch_code(std::string_view name, int64_t* code) {
  // Target features, as LLVM's target IDs write them (gfx90a:sramecc+:xnack-): each a name and a
  // '+' or '-'. They do not change the code; a malformed one (gfx906:bogus) makes the name invalid.
  const size_t colon = name.find(':');
  if (colon != std::string_view::npos) {
    std::string_view features = name.substr(colon + 1);
    while (!features.empty() && is_space(features.back())) features.remove_suffix(1);
    while (true) {
      const size_t end = std::min(features.find(':'), features.size());
      const std::string_view feature = features.substr(0, end);
      if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-')) return false;
      for (size_t i = 0; i + 1 < feature.size(); ++i) {
        const char c = feature[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
      }
      if (end == features.size()) break;
      features.remove_prefix(end + 1);
    }
    name = name.substr(0, colon);
  }
  while (!name.empty() && is_space(name.back())) name.remove_suffix(1);
  char lower[kMaxArchNameLength + 1];
  if (name.empty() || name.size() > kMaxArchNameLength) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    lower[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  std::string_view rest(lower, name.size());
  for (int i = 0; i < kFixedArchCount; ++i) {
    if (equals(rest, kFixedArchs[i])) {
      *code = i;
      return true;
    }
  }
  int64_t flags = 0;
  const size_t prefix = sizeof kGfxPrefix - 1, suffix = sizeof kGenericSuffix - 1;
  if (rest.size() > prefix && rest.substr(0, prefix) == kGfxPrefix) {
    flags |= 1;
    rest.remove_prefix(prefix);
  }
  if (rest.size() > suffix && rest.substr(rest.size() - suffix) == kGenericSuffix) {
    flags |= 2;
    rest.remove_suffix(suffix);
  }
  if (rest.size() > static_cast<size_t>(kArchPackedChars)) return false;
  int64_t packed = 0;
  for (int i = 0; i < kArchPackedChars; ++i) {
    int digit = 0;
    if (static_cast<size_t>(i) < rest.size()) {
      digit = arch_digit(rest[i]);
      if (digit < 0) return false;
    }
    packed = packed * kArchRadix + digit;
  }
  *code = kArchNameCodeBase + flags * kArchPackedSpan + packed;
  return true;
}

bool format_arch(int64_t code, char* buffer, size_t size) {
  if (size > 0) buffer[0] = '\0';
  char name[kMaxArchNameLength + 1];
  size_t length = 0;
  if (code >= 0 && code < kFixedArchCount) {
    length = std::strlen(kFixedArchs[code]);
    std::memcpy(name, kFixedArchs[code], length);
  } else {
    if (code < kArchNameCodeBase || code - kArchNameCodeBase >= 4 * kArchPackedSpan) return false;
    const int64_t flags = (code - kArchNameCodeBase) / kArchPackedSpan;
    int64_t packed = (code - kArchNameCodeBase) % kArchPackedSpan;
    int digits[kArchPackedChars];
    for (int i = kArchPackedChars - 1; i >= 0; --i) {
      digits[i] = static_cast<int>(packed % kArchRadix);
      packed /= kArchRadix;
    }
    if (flags & 1) {
      std::memcpy(name, kGfxPrefix, sizeof kGfxPrefix - 1);
      length = sizeof kGfxPrefix - 1;
    }
    for (int i = 0; i < kArchPackedChars && digits[i] != 0; ++i) name[length++] = arch_char(digits[i]);
    if (flags & 2) {
      std::memcpy(name + length, kGenericSuffix, sizeof kGenericSuffix - 1);
      length += sizeof kGenericSuffix - 1;
    }
    // Only a name's own code decodes (no digits after the padding, no fixed name in packed form).
    int64_t again = -1;
    if (!arch_code(std::string_view(name, length), &again) || again != code) return false;
  }
  if (length + 1 > size) return false;
  std::memcpy(buffer, name, length);
  buffer[length] = '\0';
  return true;
}

bool find_problem_symbol(ProblemField field, std::string_view symbol, int64_t* value) {
  if (field == ProblemField::kArch) return arch_code(symbol, value);
  for (const Symbol& s : kSymbols) {
    if (s.field == field && equals(symbol, s.name)) {
      *value = s.value;
      return true;
    }
  }
  return false;
}

const char* problem_symbol_name(ProblemField field, int64_t value) {
  if (field == ProblemField::kArch) {
    if (value >= 0 && value < kFixedArchCount) return kFixedArchs[value];
    thread_local char ring[4][kMaxArchNameLength + 1];
    thread_local unsigned next = 0;
    char* buffer = ring[next++ % 4];
    return format_arch(value, buffer, sizeof ring[0]) ? buffer : nullptr;
  }
  for (const Symbol& s : kSymbols) {
    if (s.field == field && s.value == value) return s.name;
  }
  return nullptr;
}

void apply_problem_defaults(Problem* problem) {
  struct Default {
    ProblemField field;
    int64_t value;
  };
  static constexpr Default kDefaults[] = {
      {ProblemField::kSpatialDim, 2}, {ProblemField::kLayout, kNchw}, {ProblemField::kD, 1},
      {ProblemField::kZ, 1},          {ProblemField::kPadH, 0},       {ProblemField::kPadW, 0},
      {ProblemField::kPadD, 0},       {ProblemField::kStrideH, 1},    {ProblemField::kStrideW, 1},
      {ProblemField::kDilH, 1},       {ProblemField::kDilW, 1},       {ProblemField::kG, 1},
      {ProblemField::kBias, 0},
  };
  for (const Default& d : kDefaults) {
    if (!problem->has(d.field)) problem->set(d.field, d.value);
  }
  // MIOpen keys a 2-D problem with depth stride and dilation 0 (every 2-D row of its perf DBs), so
  // a problem typed without them matches the DB's rows and `table --format perfdb` writes its keys.
  const int64_t depth_default = problem->get(ProblemField::kSpatialDim) == 3 ? 1 : 0;
  if (!problem->has(ProblemField::kStrideD)) problem->set(ProblemField::kStrideD, depth_default);
  if (!problem->has(ProblemField::kDilD)) problem->set(ProblemField::kDilD, depth_default);
}

Status parse_problem(std::string_view text, Problem* problem) {
  *problem = Problem();
  const Status items = for_each_item(text, [&](std::string_view name, std::string_view value_text) -> Status {
    ProblemField field;
    if (!find_problem_field(name, &field)) {
      return Status::error(StatusCode::kInvalidArgument,
                           "unknown problem field '%.*s' (known: dir dtype layout n c k h w d y x "
                           "z pad_h pad_w pad_d stride_h stride_w stride_d dil_h dil_w dil_d g "
                           "bias spatial_dim arch)",
                           static_cast<int>(name.size()), name.data());
    }
    if (problem->has(field)) {
      return Status::error(StatusCode::kInvalidArgument, "problem field '%s' is given twice",
                           problem_field_name(field));
    }
    int64_t value = 0;
    if (field == ProblemField::kArch) {
      if (!arch_code(value_text, &value)) {
        return Status::error(StatusCode::kInvalidArgument,
                             "problem field 'arch' takes an architecture name (letters, digits and "
                             "'-', such as gfx90a, gfx1100 or gfx90a:sramecc+:xnack-), got '%.*s'",
                             static_cast<int>(value_text.size()), value_text.data());
      }
    } else if (is_symbolic(field)) {
      if (!find_problem_symbol(field, value_text, &value)) {
        char accepted[96] = "";  // the field's values, "F B W"
        size_t used = 0;
        for (const Symbol& symbol : kSymbols) {
          if (symbol.field != field) continue;
          const int n = std::snprintf(accepted + used, sizeof accepted - used, "%s%s", used ? " " : "", symbol.name);
          if (n > 0) used = std::min(sizeof accepted - 1, used + static_cast<size_t>(n));
        }
        return Status::error(StatusCode::kInvalidArgument,
                             "problem field '%s' does not take the value '%.*s' (accepted: %s)",
                             problem_field_name(field), static_cast<int>(value_text.size()),
                             value_text.data(), accepted);
      }
    } else {
      char buffer[32];
      if (value_text.empty() || value_text.size() >= sizeof buffer) {
        return Status::error(StatusCode::kInvalidArgument, "problem field '%s' has no number",
                             problem_field_name(field));
      }
      std::memcpy(buffer, value_text.data(), value_text.size());
      buffer[value_text.size()] = '\0';
      char* parse_end = nullptr;
      errno = 0;
      const long long parsed = std::strtoll(buffer, &parse_end, 10);
      if (errno == ERANGE) {  // strtoll would clamp to LLONG_MAX silently
        return Status::error(StatusCode::kInvalidArgument,
                             "problem field '%s' is out of range (at most %lld), got '%s'",
                             problem_field_name(field), LLONG_MAX, buffer);
      }
      if (*parse_end != '\0' || parsed < 0) {
        return Status::error(StatusCode::kInvalidArgument,
                             "problem field '%s' needs a non-negative integer, got '%s'",
                             problem_field_name(field), buffer);
      }
      value = parsed;
    }
    problem->set(field, value);
    return Status::ok();
  });
  if (!items) return items;
  if (problem->present == 0) return Status::error(StatusCode::kInvalidArgument, "the problem is empty");
  apply_problem_defaults(problem);
  const int64_t spatial_dim = problem->get(ProblemField::kSpatialDim);
  if (spatial_dim != 2 && spatial_dim != 3) {
    return Status::error(StatusCode::kInvalidArgument, "problem field 'spatial_dim' must be 2 or 3, got %lld",
                         static_cast<long long>(spatial_dim));
  }
  // Sizes, strides, dilations and groups of 0 describe no convolution. The depth ones count in 3-D
  // only: in 2-D they are MIOpen's 0 placeholders.
  static constexpr ProblemField kPositive[] = {
      ProblemField::kN,       ProblemField::kC,    ProblemField::kK,    ProblemField::kH,
      ProblemField::kW,       ProblemField::kY,    ProblemField::kX,    ProblemField::kStrideH,
      ProblemField::kStrideW, ProblemField::kDilH, ProblemField::kDilW, ProblemField::kG,
      ProblemField::kD,       ProblemField::kZ,    ProblemField::kStrideD, ProblemField::kDilD};
  constexpr size_t kPlanarCount = 12;  // the depth fields come last
  const size_t checked = spatial_dim == 3 ? sizeof kPositive / sizeof kPositive[0] : kPlanarCount;
  for (size_t i = 0; i < checked; ++i) {
    const ProblemField field = kPositive[i];
    if (problem->has(field) && problem->get(field) < 1) {
      return Status::error(StatusCode::kInvalidArgument, "problem field '%s' must be at least 1, got %lld",
                           problem_field_name(field), static_cast<long long>(problem->get(field)));
    }
  }
  return Status::ok();
}

int format_problem(const Problem& problem, char* buffer, size_t size) {
  int written = 0;
  for (int i = 0; i < kProblemFieldCount; ++i) {
    const ProblemField field = static_cast<ProblemField>(i);
    if (!problem.has(field)) continue;
    char arch[kMaxArchNameLength + 1];
    const char* symbol = field == ProblemField::kArch
                             ? (format_arch(problem.get(field), arch, sizeof arch) ? arch : nullptr)
                             : problem_symbol_name(field, problem.get(field));
    const size_t room = static_cast<size_t>(written) < size ? size - written : 0;
    int n;
    if (is_symbolic(field) && symbol) {
      n = std::snprintf(buffer + (room ? written : 0), room, "%s%s=%s", written ? "," : "",
                        problem_field_name(field), symbol);
    } else {
      n = std::snprintf(buffer + (room ? written : 0), room, "%s%s=%lld", written ? "," : "",
                        problem_field_name(field), static_cast<long long>(problem.get(field)));
    }
    written += n;
  }
  return written;
}

// ---------------------------------------------------------------------------------------------
// Problem schemas.

namespace {

const schema::ProblemFieldDef* field_def(const schema::ProblemSchema* table, int field) {
  return table->fields()->Get(static_cast<flatbuffers::uoffset_t>(field));
}

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > static_cast<size_t>(kMaxProblemNameLength)) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

constexpr int kMaxSymbols = 64;

}  // namespace

int ProblemSchema::field_count() const {
  return table_ ? static_cast<int>(table_->fields()->size()) : kProblemFieldCount;
}

const char* ProblemSchema::field_name(int field) const {
  if (field < 0 || field >= field_count()) return "?";
  return table_ ? field_def(table_, field)->name()->c_str() : problem_field_name(static_cast<ProblemField>(field));
}

FieldKind ProblemSchema::field_kind(int field) const {
  if (table_) return static_cast<FieldKind>(field_def(table_, field)->kind());
  const ProblemField f = static_cast<ProblemField>(field);
  return f == ProblemField::kArch ? FieldKind::kArchitecture
         : is_symbolic(f)         ? FieldKind::kEnumeration
                                  : FieldKind::kInteger;
}

bool ProblemSchema::find_field(std::string_view name, int* field) const {
  if (!table_) {
    ProblemField f;
    if (!find_problem_field(name, &f)) return false;
    *field = static_cast<int>(f);
    return true;
  }
  for (int i = 0; i < field_count(); ++i) {
    if (field_def(table_, i)->name()->string_view() == name) {
      *field = i;
      return true;
    }
  }
  return false;
}

bool ProblemSchema::find_symbol(int field, std::string_view symbol, int64_t* value) const {
  if (!table_) return find_problem_symbol(static_cast<ProblemField>(field), symbol, value);
  switch (field_kind(field)) {
    case FieldKind::kArchitecture:
      return arch_code(symbol, value);
    case FieldKind::kEnumeration: {
      const auto* symbols = field_def(table_, field)->symbols();
      for (uint32_t i = 0; i < symbols->size(); ++i) {
        if (symbols->Get(i)->string_view() == symbol) {
          *value = i;
          return true;
        }
      }
      return false;
    }
    default:
      return false;
  }
}

const char* ProblemSchema::symbol_name(int field, int64_t value) const {
  if (!table_) return problem_symbol_name(static_cast<ProblemField>(field), value);
  switch (field_kind(field)) {
    case FieldKind::kArchitecture:
      return problem_symbol_name(ProblemField::kArch, value);
    case FieldKind::kEnumeration: {
      const auto* symbols = field_def(table_, field)->symbols();
      return value >= 0 && value < static_cast<int64_t>(symbols->size())
                 ? symbols->Get(static_cast<flatbuffers::uoffset_t>(value))->c_str()
                 : nullptr;
    }
    default:
      return nullptr;
  }
}

int ProblemSchema::symbol_count(int field) const {
  if (field_kind(field) != FieldKind::kEnumeration) return 0;
  if (table_) return static_cast<int>(field_def(table_, field)->symbols()->size());
  int count = 0;
  for (const Symbol& s : kSymbols) count += s.field == static_cast<ProblemField>(field);
  return count;
}

bool ProblemSchema::has_default(int field) const {
  if (table_) return field_def(table_, field)->has_default();
  Problem defaults;
  apply_problem_defaults(&defaults);
  return defaults.has(field);
}

int64_t ProblemSchema::default_value(int field) const {
  if (table_) return field_def(table_, field)->default_value();
  Problem defaults;
  apply_problem_defaults(&defaults);
  return defaults.get(field);
}

int64_t ProblemSchema::min_value(int field) const {
  return table_ && field_kind(field) == FieldKind::kInteger ? field_def(table_, field)->min() : INT64_MIN;
}

int64_t ProblemSchema::max_value(int field) const {
  return table_ && field_kind(field) == FieldKind::kInteger ? field_def(table_, field)->max() : INT64_MAX;
}

Status verify_problem_schema(const schema::ProblemSchema* table) {
  if (table == nullptr) return Status::ok();
  const auto* fields = table->fields();
  if (fields == nullptr || fields->size() == 0 || fields->size() > static_cast<uint32_t>(kMaxProblemFields)) {
    return Status::error(StatusCode::kCorruptModel, "problem schema has %u fields (1 to %d allowed)",
                         fields ? fields->size() : 0, kMaxProblemFields);
  }
  for (uint32_t i = 0; i < fields->size(); ++i) {
    const schema::ProblemFieldDef* f = fields->Get(i);
    if (f->name() == nullptr || !is_identifier(f->name()->string_view())) {
      return Status::error(StatusCode::kCorruptModel, "problem schema: field %u has no valid name", i);
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (fields->Get(j)->name()->string_view() == f->name()->string_view()) {
        return Status::error(StatusCode::kCorruptModel, "problem schema: field '%.40s' is declared twice",
                             f->name()->c_str());
      }
    }
    const auto kind = static_cast<int>(f->kind());
    if (kind > static_cast<int>(schema::FieldKind::MAX)) {
      return Status::error(StatusCode::kUnsupported, "problem schema: field '%.40s' has unknown kind %d",
                           f->name()->c_str(), kind);
    }
    const int64_t d = f->default_value();
    if (f->kind() == schema::FieldKind::Integer &&
        (f->min() > f->max() || (f->has_default() && (d < f->min() || d > f->max())))) {
      return Status::error(StatusCode::kCorruptModel, "problem schema: field '%.40s' has a bad range or default",
                           f->name()->c_str());
    }
    if (f->kind() == schema::FieldKind::Enumeration) {
      const auto* symbols = f->symbols();
      if (symbols == nullptr || symbols->size() == 0 || symbols->size() > static_cast<uint32_t>(kMaxSymbols) ||
          (f->has_default() && (d < 0 || d >= static_cast<int64_t>(symbols->size())))) {
        return Status::error(StatusCode::kCorruptModel,
                             "problem schema: enumeration '%.40s' needs 1 to %d symbols and a default among them",
                             f->name()->c_str(), kMaxSymbols);
      }
      for (uint32_t s = 0; s < symbols->size(); ++s) {
        if (!is_identifier(symbols->Get(s)->string_view())) {
          return Status::error(StatusCode::kCorruptModel, "problem schema: enumeration '%.40s' has a bad symbol",
                               f->name()->c_str());
        }
      }
    }
    if (f->kind() == schema::FieldKind::Architecture && f->has_default()) {
      char name[kMaxArchNameLength + 1];
      if (!format_arch(d, name, sizeof name)) {
        return Status::error(StatusCode::kCorruptModel, "problem schema: field '%.40s' defaults to no architecture",
                             f->name()->c_str());
      }
    }
  }
  return Status::ok();
}

Status parse_problem(const ProblemSchema& schema, std::string_view text, Problem* problem) {
  if (schema.builtin()) return parse_problem(text, problem);
  *problem = Problem();
  const Status items = for_each_item(text, [&](std::string_view name, std::string_view value_text) -> Status {
    int field = -1;
    if (!schema.find_field(name, &field)) {
      char known[256] = "";
      size_t used = 0;
      for (int i = 0; i < schema.field_count(); ++i) {
        const int n = std::snprintf(known + used, sizeof known - used, "%s%s", i ? " " : "", schema.field_name(i));
        if (n > 0) used = std::min(sizeof known - 1, used + static_cast<size_t>(n));
      }
      return Status::error(StatusCode::kInvalidArgument, "unknown problem field '%.*s' (known: %s)",
                           static_cast<int>(name.size()), name.data(), known);
    }
    if (problem->has(field)) {
      return Status::error(StatusCode::kInvalidArgument, "problem field '%s' is given twice", schema.field_name(field));
    }
    int64_t value = 0;
    const FieldKind kind = schema.field_kind(field);
    if (kind == FieldKind::kArchitecture) {
      if (!arch_code(value_text, &value)) {
        return Status::error(StatusCode::kInvalidArgument,
                             "problem field '%s' takes an architecture name (letters, digits and '-', such as "
                             "gfx90a or h100), got '%.*s'",
                             schema.field_name(field), static_cast<int>(value_text.size()), value_text.data());
      }
    } else if (kind == FieldKind::kEnumeration) {
      if (!schema.find_symbol(field, value_text, &value)) {
        char accepted[256] = "";
        size_t used = 0;
        for (int s = 0; s < schema.symbol_count(field); ++s) {
          const int n = std::snprintf(accepted + used, sizeof accepted - used, "%s%s", s ? " " : "",
                                      schema.symbol_name(field, s));
          if (n > 0) used = std::min(sizeof accepted - 1, used + static_cast<size_t>(n));
        }
        return Status::error(StatusCode::kInvalidArgument,
                             "problem field '%s' does not take the value '%.*s' (accepted: %s)",
                             schema.field_name(field), static_cast<int>(value_text.size()), value_text.data(),
                             accepted);
      }
    } else {
      char buffer[32];
      char* parse_end = nullptr;
      long long parsed = 0;
      bool ok = !value_text.empty() && value_text.size() < sizeof buffer;
      if (ok) {
        std::memcpy(buffer, value_text.data(), value_text.size());
        buffer[value_text.size()] = '\0';
        errno = 0;
        parsed = std::strtoll(buffer, &parse_end, 10);
        ok = errno != ERANGE && *parse_end == '\0';
      }
      if (!ok) {
        return Status::error(StatusCode::kInvalidArgument, "problem field '%s' needs an integer, got '%.*s'",
                             schema.field_name(field), static_cast<int>(value_text.size()), value_text.data());
      }
      if (parsed < schema.min_value(field) || parsed > schema.max_value(field)) {
        return Status::error(StatusCode::kInvalidArgument, "problem field '%s' must lie in [%lld..%lld], got %lld",
                             schema.field_name(field), static_cast<long long>(schema.min_value(field)),
                             static_cast<long long>(schema.max_value(field)), parsed);
      }
      value = parsed;
    }
    problem->set(field, value);
    return Status::ok();
  });
  if (!items) return items;
  // An empty text is the default problem when every field has a default (else the first required
  // field is named below).
  for (int i = 0; i < schema.field_count(); ++i) {
    if (problem->has(i)) continue;
    if (!schema.has_default(i)) {
      return Status::error(StatusCode::kInvalidArgument, "the problem lacks field '%s' (it has no default)",
                           schema.field_name(i));
    }
    problem->set(i, schema.default_value(i));
  }
  return Status::ok();
}

int format_problem(const ProblemSchema& schema, const Problem& problem, char* buffer, size_t size) {
  if (schema.builtin()) return format_problem(problem, buffer, size);
  int written = 0;
  for (int i = 0; i < schema.field_count(); ++i) {
    if (!problem.has(i)) continue;
    const char* symbol = schema.field_kind(i) == FieldKind::kInteger ? nullptr : schema.symbol_name(i, problem.get(i));
    const size_t room = static_cast<size_t>(written) < size ? size - written : 0;
    const int n = symbol ? std::snprintf(buffer + (room ? written : 0), room, "%s%s=%s", written ? "," : "",
                                         schema.field_name(i), symbol)
                         : std::snprintf(buffer + (room ? written : 0), room, "%s%s=%lld", written ? "," : "",
                                         schema.field_name(i), static_cast<long long>(problem.get(i)));
    written += n;
  }
  return written;
}

}  // namespace tunecast
