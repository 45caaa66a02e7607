// Problems as MIOpen users write them (MIOpenDriver command lines, perf-DB keys, network configs,
// fields) read into one convention: problem_forms.h says which.
#include "tunecast/codegen/problem_forms.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace tunecast::codegen {
namespace {

bool is_separator(char c) { return c == ',' || c == ';' || std::isspace(static_cast<unsigned char>(c)); }

std::vector<std::string> split(std::string_view text, bool (*separator)(char)) {
  std::vector<std::string> items;
  std::string item;
  for (const char c : text) {
    if (separator(c)) {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> items;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    items.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return items;
    start = end + 1;
  }
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// A non-negative decimal integer that fits int64.
bool parse_count(const std::string& text, int64_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  *out = value;
  return true;
}

// The forward convolution's output size along one axis, or -1 when the filter does not fit.
int64_t forward_out(int64_t in, int64_t pad, int64_t filter, int64_t stride, int64_t dilation) {
  const int64_t span = dilation * (filter - 1) + 1;
  if (stride < 1 || in + 2 * pad < span) return -1;
  return (in + 2 * pad - span) / stride + 1;
}

// "name=value,..." from the form's fields, then the extra items, read by parse_problem (its checks
// and defaults, and its messages for the extras), errors prefixed with the form's name.
Status finish(const char* form, const std::vector<std::pair<std::string, std::string>>& fields,
              const std::vector<std::string>& extras, Problem* problem) {
  std::string text;
  for (const auto& [name, value] : fields) text += (text.empty() ? "" : ",") + name + "=" + value;
  for (const std::string& extra : extras) text += "," + extra;
  const Status status = parse_problem(text, problem);
  if (!status) return Status::error(status.code(), "%s: %s", form, status.message());
  return Status::ok();
}

// ---- MIOpenDriver ----------------------------------------------------------------------------

// The conv driver's flags (ROCm/MIOpen driver/conv_driver.hpp, AddCmdLineArgs): short letter,
// long name. Those that describe the problem are read; the rest (timing, verification, files)
// take a value that is ignored.
struct DriverFlag {
  char letter;
  const char* name;
  bool read;
};
constexpr DriverFlag kDriverFlags[] = {
    {'F', "forw", true},          {'n', "batchsize", true},      {'c', "in_channels", true},
    {'!', "in_d", true},          {'H', "in_h", true},           {'W', "in_w", true},
    {'k', "out_channels", true},  {'@', "fil_d", true},          {'y', "fil_h", true},
    {'x', "fil_w", true},         {'#', "conv_stride_d", true},  {'u', "conv_stride_h", true},
    {'v', "conv_stride_w", true}, {'$', "pad_d", true},          {'p', "pad_h", true},
    {'q', "pad_w", true},         {'^', "dilation_d", true},     {'l', "dilation_h", true},
    {'j', "dilation_w", true},    {'g', "group_count", true},    {'_', "spatial_dim", true},
    {'b', "bias", true},          {'m', "mode", true},           {'I', "in_layout", true},
    {'O', "out_layout", true},    {'f', "fil_layout", true},     {'z', "pad_mode", true},
    {'Z', "tensor_vect", true},   {'L', "vector_length", true},  {'%', "trans_output_pad_d", false},
    {'Y', "trans_output_pad_h", false}, {'X', "trans_output_pad_w", false},
    {'r', "pad_val", false},      {'i', "iter", false},          {'V', "verify", false},
    {'C', "verification_cache", false}, {'t', "time", false},   {'w', "wall", false},
    {'s', "search", false},       {'P', "printconv", false},     {'o', "dump_output", false},
    {'d', "in_data", false},      {'e', "weights", false},       {'a', "in_bias", false},
    {'D', "dout_data", false},    {'S', "solution", false},
};

const DriverFlag* find_driver_flag(const std::string& arg) {
  if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
    std::string name = arg.substr(2);
    if (name == "conv_stride_0") name = "conv_stride_h";  // older drivers' names
    if (name == "conv_stride_1") name = "conv_stride_w";
    for (const DriverFlag& f : kDriverFlags) {
      if (name == f.name) return &f;
    }
  } else if (arg.size() == 2 && arg[0] == '-') {
    for (const DriverFlag& f : kDriverFlags) {
      if (arg[1] == f.letter) return &f;
    }
  }
  return nullptr;
}

bool names_driver(const std::string& word) {
  const size_t slash = word.find_last_of('/');
  return word.compare(slash == std::string::npos ? 0 : slash + 1, std::string::npos, "MIOpenDriver") == 0;
}

const char* driver_dtype(const std::string& command) {
  if (command == "conv") return "FP32";
  if (command == "convfp16") return "FP16";
  if (command == "convbfp16") return "BF16";
  if (command == "convint8") return "INT8";
  return nullptr;
}

Status parse_driver(const std::vector<std::string>& words, Problem* problem) {
  const char* form = "MIOpenDriver command line";
  size_t i = names_driver(words[0]) ? 1 : 0;
  if (i >= words.size() || driver_dtype(words[i]) == nullptr) {
    return Status::error(StatusCode::kInvalidArgument,
                         "%s: '%s' is not a convolution command (conv, convfp16, convbfp16 or convint8)", form,
                         i < words.size() ? words[i].c_str() : "");
  }
  const std::string dtype = driver_dtype(words[i]);
  std::map<std::string, std::string> values;  // long name -> value
  std::vector<std::string> extras;
  for (++i; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word[0] != '-' && word.find('=') != std::string::npos) {
      extras.push_back(word);
      continue;
    }
    std::string flag_text = word, value;
    bool inline_value = false;
    if (const size_t eq = word.find('='); word.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag_text = word.substr(0, eq);
      value = word.substr(eq + 1);
      inline_value = true;
    }
    const DriverFlag* flag = find_driver_flag(flag_text);
    if (flag == nullptr) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s: '%s' is not a flag of MIOpenDriver's conv command (name=value items such as "
                           "arch=gfx906 may follow it)",
                           form, word.c_str());
    }
    if (!inline_value) {
      if (i + 1 >= words.size()) {
        return Status::error(StatusCode::kInvalidArgument, "%s: flag %s needs a value", form, word.c_str());
      }
      value = words[++i];
    }
    if (!values.emplace(flag->name, value).second) {
      return Status::error(StatusCode::kInvalidArgument, "%s: flag -%c (--%s) is given twice", form, flag->letter,
                           flag->name);
    }
  }
  auto text = [&](const char* name, const char* fallback) {
    const auto it = values.find(name);
    return it == values.end() ? std::string(fallback) : it->second;
  };
  std::map<std::string, int64_t> n;  // numeric flags, checked
  for (const DriverFlag& f : kDriverFlags) {
    const auto it = values.find(f.name);
    if (!f.read || it == values.end()) continue;
    const std::string name = f.name;
    if (name == "mode" || name == "pad_mode" || name.find("layout") != std::string::npos) continue;
    int64_t value = 0;
    if (!parse_count(it->second, &value)) {
      return Status::error(StatusCode::kInvalidArgument, "%s: flag -%c (--%s) needs a non-negative integer, got '%s'",
                           form, f.letter, f.name, it->second.c_str());
    }
    n[name] = value;
  }
  if (!n.count("forw") || (n["forw"] != 1 && n["forw"] != 2 && n["forw"] != 4)) {
    return Status::error(StatusCode::kInvalidArgument,
                         "%s: -F %s names %s: give one direction, -F 1 (forward), 2 (backward data) or 4 "
                         "(backward weights); tuning parameters are per direction",
                         form, n.count("forw") ? text("forw", "").c_str() : "(none)",
                         !n.count("forw")   ? "every direction (the driver's default 0)"
                         : n["forw"] == 0   ? "every direction (fwd+bwd+wrw)"
                                            : "several directions, or none");
  }
  if (text("mode", "conv") != "conv") {
    return Status::error(StatusCode::kInvalidArgument,
                         "%s: -m %s: only -m conv is read (a transposed convolution is another problem)", form,
                         text("mode", "").c_str());
  }
  if (text("pad_mode", "default") != "default") {
    return Status::error(StatusCode::kInvalidArgument, "%s: -z %s: give the pads with -p and -q instead of a pad mode",
                         form, text("pad_mode", "").c_str());
  }
  if (text("tensor_vect", "0") != "0" || text("vector_length", "1") != "1") {
    return Status::error(StatusCode::kInvalidArgument, "%s: vectorized tensors (-Z, -L) are not read", form);
  }
  const int64_t dims = n.count("spatial_dim") ? n["spatial_dim"] : 2;
  if (dims != 2 && dims != 3) {
    return Status::error(StatusCode::kInvalidArgument, "%s: -_ %lld: the spatial dimension is 2 or 3", form,
                         static_cast<long long>(dims));
  }
  std::vector<const char*> required = {"batchsize", "in_channels", "in_h", "in_w", "out_channels", "fil_h", "fil_w"};
  if (dims == 3) required.insert(required.end(), {"in_d", "fil_d"});
  for (const char* name : required) {
    if (!n.count(name)) {
      char letter = '?';
      for (const DriverFlag& f : kDriverFlags) {
        if (std::string(f.name) == name) letter = f.letter;
      }
      return Status::error(StatusCode::kInvalidArgument,
                           "%s: flag -%c (--%s) is missing (the driver's default is not assumed)", form, letter, name);
    }
  }
  const std::string layout = text("in_layout", dims == 2 ? "NCHW" : "NCDHW");
  if (text("out_layout", layout.c_str()) != layout || text("fil_layout", layout.c_str()) != layout) {
    return Status::error(StatusCode::kInvalidArgument,
                         "%s: -I %s, -O %s and -f %s differ: a problem has one layout for every tensor", form,
                         layout.c_str(), text("out_layout", layout.c_str()).c_str(),
                         text("fil_layout", layout.c_str()).c_str());
  }
  auto get = [&](const char* name, int64_t fallback) { return n.count(name) ? n[name] : fallback; };
  const int64_t dir = n["forw"];
  const int64_t C = n["in_channels"], K = n["out_channels"], H = n["in_h"], W = n["in_w"];
  const int64_t D = dims == 3 ? n["in_d"] : 1;
  const int64_t y = n["fil_h"], x = n["fil_w"], z = dims == 3 ? n["fil_d"] : 1;
  const int64_t pad_h = get("pad_h", 0), pad_w = get("pad_w", 0), pad_d = get("pad_d", 0);
  const int64_t u = get("conv_stride_h", 1), v = get("conv_stride_w", 1), s_d = get("conv_stride_d", 1);
  const int64_t l = get("dilation_h", 1), j = get("dilation_w", 1), dil_d = get("dilation_d", 1);
  std::vector<std::pair<std::string, std::string>> fields;
  auto add = [&](const char* name, int64_t value) { fields.emplace_back(name, std::to_string(value)); };
  fields.emplace_back("dir", dir == 1 ? "F" : dir == 2 ? "B" : "W");
  fields.emplace_back("dtype", dtype);
  fields.emplace_back("layout", layout);
  add("spatial_dim", dims);
  add("n", n["batchsize"]);
  if (dir == 1) {
    add("c", C);
    add("k", K);
    add("h", H);
    add("w", W);
    if (dims == 3) add("d", D);
  } else {
    // MIOpen's backward problems read dy: its channels are the forward K, its size the forward
    // output's.
    const int64_t out_h = forward_out(H, pad_h, y, u, l), out_w = forward_out(W, pad_w, x, v, j);
    const int64_t out_d = dims == 3 ? forward_out(D, pad_d, z, s_d, dil_d) : 1;
    if (out_h < 1 || out_w < 1 || out_d < 1) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s: the filter does not fit the padded input (-H %lld -W %lld -y %lld -x %lld -p %lld "
                           "-q %lld): no forward output, so no dy to read",
                           form, static_cast<long long>(H), static_cast<long long>(W), static_cast<long long>(y),
                           static_cast<long long>(x), static_cast<long long>(pad_h), static_cast<long long>(pad_w));
    }
    add("c", K);
    add("k", C);
    add("h", out_h);
    add("w", out_w);
    if (dims == 3) add("d", out_d);
  }
  add("y", y);
  add("x", x);
  add("pad_h", pad_h);
  add("pad_w", pad_w);
  add("stride_h", u);
  add("stride_w", v);
  add("dil_h", l);
  add("dil_w", j);
  if (dims == 3) {
    add("z", z);
    add("pad_d", pad_d);
    add("stride_d", s_d);
    add("dil_d", dil_d);
  }
  add("g", get("group_count", 1));
  add("bias", get("bias", 0) != 0 ? 1 : 0);
  return finish(form, fields, extras, problem);
}

// ---- perf-DB key and network config ----------------------------------------------------------

bool all_alpha(const std::string& s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  }
  return true;
}

bool is_dtype(const std::string& s) { return s == "FP32" || s == "FP16" || s == "BF16" || s == "INT8"; }

// The numbers of "AxBxC", exactly `count` of them.
bool parse_dims(const std::string& text, size_t count, std::vector<int64_t>* out) {
  const std::vector<std::string> parts = split_on(text, 'x');
  if (parts.size() != count) return false;
  out->clear();
  for (const std::string& p : parts) {
    int64_t v = 0;
    if (!parse_count(p, &v)) return false;
    out->push_back(v);
  }
  return true;
}

// The problem's sizes as MIOpen's ProblemDescription holds them (in = what the kernel reads).
struct KeySizes {
  int dims = 2;
  int64_t c = 0, k = 0, n = 0, bias = 0, g = 1;
  std::vector<int64_t> in, filter, out, pad, stride, dilation;  // depth first when 3-D
  std::string layout, dtype, dir;
};

// The checks and fields shared by the key and the network config: `out` must follow from `in`
// (forward) or `in` from `out` (backward: in is dy).
Status key_fields(const char* form, const KeySizes& s, const std::vector<std::string>& extras, Problem* problem) {
  const std::vector<int64_t>& from = s.dir == "F" ? s.in : s.out;
  const std::vector<int64_t>& to = s.dir == "F" ? s.out : s.in;
  for (size_t a = 0; a < from.size(); ++a) {
    if (forward_out(from[a], s.pad[a], s.filter[a], s.stride[a], s.dilation[a]) != to[a]) {
      return Status::error(StatusCode::kInvalidArgument,
                           "%s: the %s size %lld does not follow from the %s size %lld with filter %lld, pad %lld, "
                           "stride %lld and dilation %lld (a typo, or not MIOpen's key)",
                           form, s.dir == "F" ? "output" : "input (dy)", static_cast<long long>(to[a]),
                           s.dir == "F" ? "input" : "output (dx or x)", static_cast<long long>(from[a]),
                           static_cast<long long>(s.filter[a]), static_cast<long long>(s.pad[a]),
                           static_cast<long long>(s.stride[a]), static_cast<long long>(s.dilation[a]));
    }
  }
  std::vector<std::pair<std::string, std::string>> fields;
  auto add = [&](const char* name, int64_t value) { fields.emplace_back(name, std::to_string(value)); };
  fields.emplace_back("dir", s.dir);
  fields.emplace_back("dtype", s.dtype);
  fields.emplace_back("layout", s.layout);
  add("spatial_dim", s.dims);
  add("n", s.n);
  add("c", s.c);
  add("k", s.k);
  const size_t o = s.dims == 3 ? 1 : 0;  // index of the height
  add("h", s.in[o]);
  add("w", s.in[o + 1]);
  add("y", s.filter[o]);
  add("x", s.filter[o + 1]);
  add("pad_h", s.pad[o]);
  add("pad_w", s.pad[o + 1]);
  add("stride_h", s.stride[o]);
  add("stride_w", s.stride[o + 1]);
  add("dil_h", s.dilation[o]);
  add("dil_w", s.dilation[o + 1]);
  if (s.dims == 3) {
    add("d", s.in[0]);
    add("z", s.filter[0]);
    add("pad_d", s.pad[0]);
    add("stride_d", s.stride[0]);
    add("dil_d", s.dilation[0]);
  }
  add("g", s.g);
  add("bias", s.bias);
  return finish(form, fields, extras, problem);
}

Status bad_key(const char* form, const std::string& key, const char* why) {
  return Status::error(StatusCode::kInvalidArgument, "%s '%.80s%s': %s", form, key.c_str(), key.size() > 80 ? "..." : "",
                       why);
}

// "C-[D-]H-W-[FZx]FYxFX-K-[OD-]OH-OW-N-[PDx]PHxPW-[SDx]SHxSW-[DDx]DHxDW-bias-layout[-wei-out]-dtype-dir[_gG]".
Status parse_key(const std::string& key, const std::vector<std::string>& extras, Problem* problem) {
  const char* form = "perf-DB key";
  const std::vector<std::string> parts = split_on(key, '-');
  size_t layout_at = 0;
  while (layout_at < parts.size() && !all_alpha(parts[layout_at])) ++layout_at;
  KeySizes s;
  s.dims = layout_at == 12 ? 2 : layout_at == 14 ? 3 : 0;
  if (s.dims == 0) {
    return bad_key(form, key,
                   "not MIOpen's perf-DB key (C-H-W-YxX-K-OH-OW-N-PHxPW-SHxSW-DHxDW-bias-layout-type-dir, e.g. "
                   "64-28-28-1x1-128-28-28-16-0x0-1x1-1x1-0-NCHW-FP32-F)");
  }
  const size_t sd = static_cast<size_t>(s.dims);
  std::vector<int64_t> one;
  size_t p = 0;
  auto number = [&](int64_t* out) { return parse_dims(parts[p++], 1, &one) && (*out = one[0], true); };
  auto numbers = [&](size_t count, std::vector<int64_t>* out) {
    out->clear();
    for (size_t i = 0; i < count; ++i) {
      int64_t v = 0;
      if (!number(&v)) return false;
      out->push_back(v);
    }
    return true;
  };
  bool ok = number(&s.c) && numbers(sd, &s.in) && parse_dims(parts[p++], sd, &s.filter) && number(&s.k) &&
            numbers(sd, &s.out) && number(&s.n) && parse_dims(parts[p++], sd, &s.pad) &&
            parse_dims(parts[p++], sd, &s.stride) && parse_dims(parts[p++], sd, &s.dilation) && number(&s.bias);
  if (!ok) return bad_key(form, key, "a size is not a number, or a filter/pad/stride/dilation is not AxB");
  const size_t rest = parts.size() - layout_at;  // layout(s), type, direction
  if (rest != 3 && rest != 5) return bad_key(form, key, "expected the layout, data type and direction at its end");
  s.layout = parts[layout_at];
  if (rest == 5 && (parts[layout_at + 1] != s.layout || parts[layout_at + 2] != s.layout)) {
    return bad_key(form, key, "the input, weights and output layouts differ: a problem has one layout");
  }
  s.dtype = parts[parts.size() - 2];
  if (!is_dtype(s.dtype)) {
    return bad_key(form, key, "the data type is not one of FP32, FP16, BF16, INT8 (mixed types are not read)");
  }
  std::vector<std::string> tail = split_on(parts.back(), '_');  // "F", "F_g2"
  s.dir = tail[0];
  for (size_t i = 1; i < tail.size(); ++i) {
    int64_t g = 0;
    if (tail[i].size() > 1 && tail[i][0] == 'g' && parse_count(tail[i].substr(1), &g)) {
      s.g = g;
    } else {
      return bad_key(form, key, "only a group count (_gN) may follow the direction (cast types are not read)");
    }
  }
  if (s.dir != "F" && s.dir != "B" && s.dir != "W") return bad_key(form, key, "the direction is not F, B or W");
  return key_fields(form, s, extras, problem);
}

// "CxHxWxYxXxKxOHxOWxNxlayout[xwei xout]xtype[xcasts]xPHxPWxSHxSWxDHxDWxGxDir[xAlphaBeta]".
Status parse_network_config(const std::string& key, const std::vector<std::string>& extras, Problem* problem) {
  const char* form = "network config";
  const std::vector<std::string> parts = split_on(key, 'x');
  size_t at = 0;
  while (at < parts.size() && !all_alpha(parts[at])) ++at;
  KeySizes s;
  s.dims = at == 9 ? 2 : at == 12 ? 3 : 0;
  if (s.dims == 0) {
    return bad_key(form, key, "not MIOpen's network config (CxHxWxYxXxKxOHxOWxNxLAYOUTxTYPExPHxPWxSHxSWxDHxDWxGxDIR)");
  }
  const size_t sd = static_cast<size_t>(s.dims);
  std::vector<int64_t> values;
  for (size_t i = 0; i < at; ++i) {
    int64_t v = 0;
    if (!parse_count(parts[i], &v)) return bad_key(form, key, "a size is not a number");
    values.push_back(v);
  }
  size_t v = 0;
  auto take = [&](size_t count) {
    std::vector<int64_t> out(values.begin() + static_cast<long>(v), values.begin() + static_cast<long>(v + count));
    v += count;
    return out;
  };
  s.c = take(1)[0];
  s.in = take(sd);
  s.filter = take(sd);
  s.k = take(1)[0];
  s.out = take(sd);
  s.n = take(1)[0];
  size_t p = at;
  s.layout = parts[p++];
  if (p + 1 < parts.size() && all_alpha(parts[p]) && !is_dtype(parts[p])) {  // weights and output layouts
    if (parts[p] != s.layout || parts[p + 1] != s.layout) {
      return bad_key(form, key, "the input, weights and output layouts differ: a problem has one layout");
    }
    p += 2;
  }
  if (p >= parts.size() || !is_dtype(parts[p])) {
    return bad_key(form, key, "the data type is not one of FP32, FP16, BF16, INT8 (mixed types are not read)");
  }
  s.dtype = parts[p++];
  std::vector<int64_t> tail;
  for (; p < parts.size() && !all_alpha(parts[p]); ++p) {
    int64_t value = 0;
    if (!parse_count(parts[p], &value)) return bad_key(form, key, "a pad, stride, dilation or group is not a number");
    tail.push_back(value);
  }
  if (tail.size() != 3 * sd + 1 || p >= parts.size()) {
    return bad_key(form, key, "expected the pads, strides, dilations, group count and direction after the type");
  }
  s.pad.assign(tail.begin(), tail.begin() + static_cast<long>(sd));
  s.stride.assign(tail.begin() + static_cast<long>(sd), tail.begin() + static_cast<long>(2 * sd));
  s.dilation.assign(tail.begin() + static_cast<long>(2 * sd), tail.begin() + static_cast<long>(3 * sd));
  s.g = tail.back();
  s.dir = parts[p++];
  if (s.dir != "F" && s.dir != "B" && s.dir != "W") return bad_key(form, key, "the direction is not F, B or W");
  if (p + 1 < parts.size() || (p < parts.size() && parts[p] != "Default" && parts[p] != "Scale" &&
                               parts[p] != "Bilinear")) {
    return bad_key(form, key, "unexpected items after the direction");
  }
  return key_fields(form, s, extras, problem);
}

}  // namespace

const char* problem_form_name(ProblemForm form) {
  switch (form) {
    case ProblemForm::kFields: return "fields";
    case ProblemForm::kDriver: return "MIOpenDriver command line";
    case ProblemForm::kPerfDbKey: return "perf-DB key";
    case ProblemForm::kNetworkConfig: return "network config";
  }
  return "?";
}

const char* problem_convention_text() {
  return "for dir=F, c and k are the input and output channels and h x w the input size; for dir=B "
         "and W they describe dy, the forward output, as MIOpen's perf DB does: c = the forward K, "
         "k = the forward C, h x w = the forward output size (a MIOpenDriver line is converted)";
}

Status parse_problem_any(std::string_view text, Problem* problem, ProblemForm* form) {
  const std::vector<std::string> words = split(text, is_space);
  ProblemForm detected = ProblemForm::kFields;
  if (!words.empty() && (names_driver(words[0]) || driver_dtype(words[0]) != nullptr)) {
    detected = ProblemForm::kDriver;
  } else {
    // The key or config is the first item; `name=value` items may follow it.
    const std::vector<std::string> items = split(text, is_separator);
    if (!items.empty() && std::isdigit(static_cast<unsigned char>(items[0][0])) &&
        items[0].find('=') == std::string::npos) {
      detected = items[0].find('-') != std::string::npos ? ProblemForm::kPerfDbKey : ProblemForm::kNetworkConfig;
    }
  }
  if (form != nullptr) *form = detected;
  *problem = Problem();
  switch (detected) {
    case ProblemForm::kDriver: return parse_driver(words, problem);
    case ProblemForm::kPerfDbKey:
    case ProblemForm::kNetworkConfig: {
      const std::vector<std::string> items = split(text, is_separator);
      const std::vector<std::string> extras(items.begin() + 1, items.end());
      return detected == ProblemForm::kPerfDbKey ? parse_key(items[0], extras, problem)
                                                 : parse_network_config(items[0], extras, problem);
    }
    case ProblemForm::kFields: break;
  }
  return parse_problem(text, problem);
}

}  // namespace tunecast::codegen
