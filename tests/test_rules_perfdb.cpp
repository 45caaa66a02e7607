// The shipped rule files (weights/rules/*.tcr) against every tuned row of MIOpen's perf DBs: each
// row satisfies every constraint, except the exceptions the specs (shared/specs/*.md) document,
// with the documented counts. Plus the perf DB reader itself.
#include <doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <unistd.h>
#include <string>
#include <vector>

#include "constraint_vm.h"
#include "test_data.h"
#include "tunecast/codegen/perfdb.h"
#include "tunecast/codegen/problem_forms.h"
#include "tunecast/codegen/rules_compiler.h"

using namespace tunecast;

namespace {

vm::ProgramView view_of(const ir::Program& program) {
  return {program.code.data(), static_cast<uint32_t>(program.code.size()), program.constants.data(),
          static_cast<uint32_t>(program.constants.size())};
}

rules::CompiledRules load_rules(const std::string& kernel, const std::map<std::string, int64_t>& defines = {}) {
  rules::CompileOptions options;
  for (const auto& [name, value] : defines) options.defines[name] = value;
  rules::CompiledRules out;
  const Status status =
      rules::compile_file(tunecast_test::source_path("weights/rules/" + kernel + ".tcr"), options, &out);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  for (const ir::Constraint& c : out.constraints) {
    const Status verified = vm::verify(view_of(c.program), static_cast<int>(c.position) + 1, c.text.c_str());
    REQUIRE_MESSAGE(verified.is_ok(), std::string(verified.message()));
  }
  return out;
}

// Whether the full vector satisfies every constraint (each one is evaluated with the full vector,
// which reads only the positions up to its own).
bool accepts(const rules::CompiledRules& rules, const Problem& problem, const std::vector<int64_t>& params) {
  if (params.size() != rules.params.size()) return false;
  for (const ir::Constraint& c : rules.constraints) {
    int64_t result = 0;
    if (!vm::evaluate(view_of(c.program), problem, params.data(), &result) || result == 0) return false;
  }
  return true;
}

std::vector<PerfDbRow> load_rows(const std::string& db, const std::string& solver) {
  std::vector<PerfDbRow> rows;
  const Status status = read_perf_db(tunecast_test::data_path("miopen/perfdb/" + db), solver, {}, &rows);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  return rows;
}

struct Failures {
  int count = 0;
  std::vector<std::string> first;  // "params | problem" of the first few
};

template <typename Predicate>
Failures failures(const rules::CompiledRules& rules, const std::vector<PerfDbRow>& rows, Predicate selected) {
  Failures result;
  for (const PerfDbRow& row : rows) {
    if (!selected(row) || accepts(rules, row.problem, row.params)) continue;
    ++result.count;
    if (result.first.size() < 5) {
      char problem[512];
      format_problem(row.problem, problem, sizeof(problem));
      result.first.push_back(row.params_text + " | " + problem);
    }
  }
  return result;
}

Failures failures(const rules::CompiledRules& rules, const std::vector<PerfDbRow>& rows) {
  return failures(rules, rows, [](const PerfDbRow&) { return true; });
}

std::string describe(const Failures& f) {
  std::string text = std::to_string(f.count) + " failing rows";
  for (const std::string& row : f.first) text += "\n  " + row;
  return text;
}

bool strided(const PerfDbRow& row) {
  return row.problem.get(ProblemField::kStrideH) > 1 || row.problem.get(ProblemField::kStrideW) > 1;
}

#define TUNECAST_REQUIRE_SHARED_DATA()                                                       \
  if (!tunecast_test::have_shared_data()) {                                                  \
    MESSAGE("skipped: shared data not found at " << tunecast_test::data_dir()                \
                                                 << " (set TUNECAST_DATA_DIR)");             \
    return;                                                                                  \
  }

struct DbCase {
  const char* db;
  size_t rows;
};

}  // namespace

TEST_CASE("rules perfdb: ConvAsm1x1U rules hold for every tuned row") {
  TUNECAST_REQUIRE_SHARED_DATA();
  const rules::CompiledRules rules = load_rules("ConvAsm1x1U");
  CHECK(rules.params.size() == 8);
  CHECK(rules.constraints.size() == 23);
  const rules::CompiledRules dy_reading = load_rules("ConvAsm1x1U", {{"img_reading", 3}});
  // Spec: reading img_hw as the dy size H*W breaks the p = 3 rule on 6 of 259 (gfx900) and 5 of 64
  // (gfx906) backward stride-2 rows.
  struct Case : DbCase {
    size_t backward_strided;
    int dy_failures;
  };
  for (const Case& c : {Case{{"gfx900_56.db", 15417}, 259, 6}, Case{{"gfx906_60.db", 15577}, 64, 5}}) {
    INFO(c.db);
    const std::vector<PerfDbRow> rows = load_rows(c.db, "ConvAsm1x1U");
    CHECK(rows.size() == c.rows);
    const Failures all = failures(rules, rows);
    CHECK_MESSAGE(all.count == 0, describe(all));

    auto backward_strided = [](const PerfDbRow& row) {
      return row.problem.get(ProblemField::kDir) == kBackwardData && strided(row);
    };
    size_t count = 0;
    for (const PerfDbRow& row : rows) count += backward_strided(row);
    CHECK(count == c.backward_strided);
    CHECK(failures(dy_reading, rows, backward_strided).count == c.dy_failures);
    CHECK(failures(dy_reading, rows).count == c.dy_failures);

    // Negative checks: a read_size outside its domain, and for FP16 an odd k_mult.
    int mutated = 0;
    int fp16_checked = 0;
    for (const PerfDbRow& row : rows) {
      std::vector<int64_t> params = row.params;
      params[0] = 5;
      mutated += accepts(rules, row.problem, params);
      if (row.problem.get(ProblemField::kDtype) == kFp16) {
        params = row.params;
        params[1] = 1;
        CHECK_FALSE(accepts(rules, row.problem, params));
        ++fp16_checked;
      }
    }
    CHECK(mutated == 0);
    CHECK(fp16_checked > 0);
  }
}

TEST_CASE("rules perfdb: ConvOclDirectFwd1x1 rules hold for every tuned row but the documented artifact") {
  TUNECAST_REQUIRE_SHARED_DATA();
  const rules::CompiledRules rules = load_rules("ConvOclDirectFwd1x1");
  CHECK(rules.params.size() == 9);
  CHECK(rules.constraints.size() == 9);
  for (uint32_t p = 0; p < 9; ++p) CHECK(rules.constraints[p].position == p);
  const rules::CompiledRules narrow_dx = load_rules("ConvOclDirectFwd1x1", {{"dx_reading", 1}});  // 2W - 1
  const rules::CompiledRules wide_dx = load_rules("ConvOclDirectFwd1x1", {{"dx_reading", 2}});    // 2W
  struct Case : DbCase {
    int artifacts;
    size_t searched_backward_strided;  // searched version-0 B stride-2 rows
    int narrow_failures;               // of those, failing with dx = 2W - 1 (spec: 231/297, 26/44)
    int wide_default_failures;         // default rows failing with dx = 2W (spec: gfx900 2, gfx906 3)
  };
  for (const Case& c : {Case{{"gfx900_56.db", 18272}, 0, 297, 66, 2}, Case{{"gfx906_60.db", 4706}, 1, 44, 18, 3}}) {
    INFO(c.db);
    const std::vector<PerfDbRow> rows = load_rows(c.db, "ConvOclDirectFwd1x1");
    CHECK(rows.size() == c.rows);
    const Failures all = failures(rules, rows);
    CHECK_MESSAGE(all.count == c.artifacts, describe(all));
    for (const std::string& row : all.first) CHECK(row.rfind("16,16,16,16,1,1,2,3,1 | ", 0) == 0);

    auto is_artifact = [](const PerfDbRow& row) { return row.params_text == "16,16,16,16,1,1,2,3,1"; };
    auto searched_b_strided = [&](const PerfDbRow& row) {
      return row.params[8] == 0 && row.problem.get(ProblemField::kDir) == kBackwardData && strided(row);
    };
    auto default_row = [&](const PerfDbRow& row) { return row.params[8] == 1 && !is_artifact(row); };
    size_t count = 0;
    for (const PerfDbRow& row : rows) count += searched_b_strided(row);
    CHECK(count == c.searched_backward_strided);
    CHECK(failures(narrow_dx, rows, searched_b_strided).count == c.narrow_failures);
    CHECK(failures(wide_dx, rows, default_row).count == c.wide_default_failures);
    CHECK(failures(wide_dx, rows, [&](const PerfDbRow& row) { return !default_row(row) && !is_artifact(row); })
              .count == 0);

    // Negative checks: n_stacks outside {0, 1}; a searched vector marked as a default.
    int accepted = 0;
    int searched = 0;
    for (const PerfDbRow& row : rows) {
      std::vector<int64_t> params = row.params;
      params[8] = 2;
      accepted += accepts(rules, row.problem, params);
      if (row.params[8] == 0) {
        params[8] = 1;
        accepted += accepts(rules, row.problem, params);
        ++searched;
      }
    }
    CHECK(accepted == 0);
    CHECK(searched > 0);
  }
}

namespace {

// Whether some completion of params[0..position) passes every constraint, trying each position's
// values from `domains`; counts in `dead_ends` the prefixes that pass their own constraints but
// have no valid completion (a constrained beam search keeps those and loses them later).
bool completes(const rules::CompiledRules& rules, const Problem& problem,
               const std::vector<std::vector<int64_t>>& domains, size_t position, std::vector<int64_t>* params,
               int* dead_ends) {
  if (position == domains.size()) return true;
  bool any = false;
  for (int64_t value : domains[position]) {
    (*params)[position] = value;
    bool pass = true;
    for (const ir::Constraint& c : rules.constraints) {
      int64_t result = 0;
      if (c.position != position) continue;
      if (!vm::evaluate(view_of(c.program), problem, params->data(), &result) || result == 0) {
        pass = false;
        break;
      }
    }
    if (!pass) continue;
    if (completes(rules, problem, domains, position + 1, params, dead_ends)) {
      any = true;
    } else {
      ++*dead_ends;
    }
  }
  return any;
}

}  // namespace

TEST_CASE("rules perfdb: no ConvOclDirectFwd1x1 prefix the rules accept is a dead end") {
  TUNECAST_REQUIRE_SHARED_DATA();
  const rules::CompiledRules rules = load_rules("ConvOclDirectFwd1x1");
  for (const char* db : {"gfx900_56.db", "gfx906_60.db"}) {
    INFO(db);
    const std::vector<PerfDbRow> rows = load_rows(db, "ConvOclDirectFwd1x1");
    std::vector<std::vector<int64_t>> domains(rules.params.size());  // every value the DB tuned
    for (const PerfDbRow& row : rows) {
      for (size_t p = 0; p < row.params.size(); ++p) {
        if (std::find(domains[p].begin(), domains[p].end(), row.params[p]) == domains[p].end()) {
          domains[p].push_back(row.params[p]);
        }
      }
    }
    int problems = 0, dead_ends = 0;
    for (size_t i = 0; i < rows.size(); i += 37) {  // a spread of problems, both directions
      std::vector<int64_t> params(domains.size(), 0);
      CHECK(completes(rules, rows[i].problem, domains, 0, &params, &dead_ends));
      ++problems;
    }
    CHECK(problems > 100);
    CHECK(dead_ends == 0);
  }
}

TEST_CASE("rules perfdb: ConvAsmBwdWrW1x1 rules hold for every tuned row") {
  TUNECAST_REQUIRE_SHARED_DATA();
  const rules::CompiledRules rules = load_rules("ConvAsmBwdWrW1x1");
  CHECK(rules.params.size() == 10);
  CHECK(rules.constraints.size() == 18);
  // The implied early VGPR checks sit at p = 6 and p = 7.
  int early = 0;
  for (const ir::Constraint& c : rules.constraints) early += c.text.rfind("vgprs(", 0) == 0 && c.position < 9;
  CHECK(early == 2);
  for (const DbCase& c : {DbCase{"gfx900_56.db", 9050}, DbCase{"gfx906_60.db", 10664}}) {
    INFO(c.db);
    const std::vector<PerfDbRow> rows = load_rows(c.db, "ConvAsmBwdWrW1x1");
    CHECK(rows.size() == c.rows);
    const Failures all = failures(rules, rows);
    CHECK_MESSAGE(all.count == 0, describe(all));
    // Negative checks: chunk_size outside its domain; chunk_size * c_per_gpr != 16.
    int accepted = 0;
    for (const PerfDbRow& row : rows) {
      std::vector<int64_t> params = row.params;
      params[0] = 32;
      accepted += accepts(rules, row.problem, params);
      params = row.params;
      params[1] = params[1] == 16 ? 8 : params[1] * 2;
      accepted += accepts(rules, row.problem, params);
    }
    CHECK(accepted == 0);
  }
}

TEST_CASE("rules perfdb: ConvAsmBwdWrW3x3 rules hold for every tuned row") {
  TUNECAST_REQUIRE_SHARED_DATA();
  const rules::CompiledRules rules = load_rules("ConvAsmBwdWrW3x3");
  CHECK(rules.params.size() == 6);
  CHECK(rules.constraints.size() == 17);
  // Spec: the gfx900 stride-2 rows pass with x = (2h-1) x (2w-1); with x = 2h x 2w one row fails
  // the instruction estimate.
  const rules::CompiledRules narrow_x = load_rules("ConvAsmBwdWrW3x3", {{"x_reading", 1}});
  const rules::CompiledRules wide_x = load_rules("ConvAsmBwdWrW3x3", {{"x_reading", 2}});
  struct Case : DbCase {
    size_t strided_rows;
    int wide_failures;
  };
  for (const Case& c : {Case{{"gfx900_56.db", 2093}, 388, 1}, Case{{"gfx906_60.db", 1698}, 0, 0}}) {
    INFO(c.db);
    const std::vector<PerfDbRow> rows = load_rows(c.db, "ConvAsmBwdWrW3x3");
    CHECK(rows.size() == c.rows);
    const Failures all = failures(rules, rows);
    CHECK_MESSAGE(all.count == 0, describe(all));
    size_t count = 0;
    for (const PerfDbRow& row : rows) count += strided(row);
    CHECK(count == c.strided_rows);
    CHECK(failures(narrow_x, rows).count == 0);
    const Failures wide = failures(wide_x, rows);
    CHECK_MESSAGE(wide.count == c.wide_failures, describe(wide));
    if (wide.count == 1) CHECK(wide.first[0].rfind("0,0,8,8,8,1 | ", 0) == 0);

    // Negative checks: limit_wave_cnt outside its domain; reverse_inout 1 on stride-2 rows.
    int accepted = 0;
    for (const PerfDbRow& row : rows) {
      std::vector<int64_t> params = row.params;
      params[0] = 10;
      accepted += accepts(rules, row.problem, params);
      if (strided(row)) {
        params = row.params;
        params[1] = 1;
        accepted += accepts(rules, row.problem, params);
      }
    }
    CHECK(accepted == 0);
  }

  // The instruction estimate depends on the architecture: FP16 is emulated without dot2, so the
  // gfx906 FP16 rows do not all fit when read as gfx900.
  std::vector<PerfDbRow> rows = load_rows("gfx906_60.db", "ConvAsmBwdWrW3x3");
  for (PerfDbRow& row : rows) row.problem.set(ProblemField::kArch, kGfx900);
  CHECK(failures(rules, rows).count > 0);
}

namespace {

// For each of the rules' applicability conditions, the rows that fail it.
std::vector<Failures> applicability_failures(const rules::CompiledRules& rules, const std::vector<PerfDbRow>& rows) {
  std::vector<Failures> out(rules.applicability.size());
  for (size_t i = 0; i < rules.applicability.size(); ++i) {
    const ir::Constraint& c = rules.applicability[i];
    REQUIRE(vm::verify(view_of(c.program), 0, c.text.c_str()).is_ok());
    for (const PerfDbRow& row : rows) {
      int64_t result = 0;
      if (vm::evaluate(view_of(c.program), row.problem, nullptr, &result) && result != 0) continue;
      ++out[i].count;
      if (out[i].first.size() < 3) {
        char problem[512];
        format_problem(row.problem, problem, sizeof(problem));
        out[i].first.push_back(problem);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("rules perfdb: every tuned row meets its kernel's applies conditions, but gfx900's WrW3x3 stride-2 rows") {
  TUNECAST_REQUIRE_SHARED_DATA();
  for (const char* kernel : {"ConvAsm1x1U", "ConvOclDirectFwd1x1", "ConvAsmBwdWrW1x1", "ConvAsmBwdWrW3x3"}) {
    const rules::CompiledRules rules = load_rules(kernel);
    CHECK(rules.applicability.size() >= 3);
    for (const char* db : {"gfx900_56.db", "gfx906_60.db"}) {
      INFO(kernel << " on " << db);
      const std::vector<PerfDbRow> rows = load_rows(db, kernel);
      REQUIRE(!rows.empty());
      const std::vector<Failures> failed = applicability_failures(rules, rows);
      for (size_t i = 0; i < failed.size(); ++i) {
        INFO("applies " << rules.applicability[i].text);
        // Spec "Exception, gfx900 stride-2 rows": older tunings; on gfx9 the solver runs stride 1 only.
        const bool stride_rule = rules.applicability[i].text == "stride_h == 1 && stride_w == 1";
        const int expected = std::string(kernel) == "ConvAsmBwdWrW3x3" && stride_rule &&
                                     std::string(db) == "gfx900_56.db" ? 388 : 0;
        CHECK_MESSAGE(failed[i].count == expected, describe(failed[i]));
      }
    }
  }
  // And problems outside them fail: a 3x3 filter for a 1x1 kernel, WrW3x3 without its pad,
  // ConvAsm1x1U backward-weights, a BF16 WrW3x3 problem.
  auto fails = [](const char* kernel, const char* text) {
    const rules::CompiledRules rules = load_rules(kernel);
    Problem problem;
    REQUIRE(parse_problem(text, &problem).is_ok());
    for (const ir::Constraint& c : rules.applicability) {
      int64_t result = 0;
      if (!vm::evaluate(view_of(c.program), problem, nullptr, &result) || result == 0) return true;
    }
    return false;
  };
  const char* asm_problem = "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906";
  const char* wrw3_problem = "dir=W,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=3,x=3,pad_h=1,pad_w=1,arch=gfx906";
  CHECK_FALSE(fails("ConvAsm1x1U", asm_problem));
  CHECK(fails("ConvAsm1x1U", "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=3,x=3,arch=gfx906"));
  CHECK(fails("ConvAsm1x1U", "dir=W,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,arch=gfx906"));
  CHECK_FALSE(fails("ConvOclDirectFwd1x1", asm_problem));
  CHECK(fails("ConvOclDirectFwd1x1", "dir=F,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=1,x=1,g=2,arch=gfx906"));
  CHECK_FALSE(fails("ConvAsmBwdWrW3x3", wrw3_problem));
  CHECK(fails("ConvAsmBwdWrW3x3", "dir=W,dtype=FP32,n=16,c=64,k=128,h=28,w=28,y=3,x=3,arch=gfx906"));
  CHECK(fails("ConvAsmBwdWrW3x3", "dir=W,dtype=BF16,n=16,c=64,k=128,h=28,w=28,y=3,x=3,pad_h=1,pad_w=1,arch=gfx906"));
  CHECK(fails("ConvAsmBwdWrW1x1", wrw3_problem));
}

TEST_CASE("rules perfdb: the perf DB reader maps config columns to problem fields") {
  TUNECAST_REQUIRE_SHARED_DATA();
  PerfDb db;
  Status status = PerfDb::open(tunecast_test::data_path("miopen/perfdb/gfx906_60.db"), &db);
  REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
  REQUIRE(db.arch().has_value());
  CHECK(*db.arch() == kGfx906);

  std::vector<PerfDbRow> rows;
  PerfDbFilter filter;
  filter.dtype = kFp16;
  filter.dir = kBackwardData;
  REQUIRE(db.rows("ConvAsm1x1U", filter, &rows).is_ok());
  REQUIRE_FALSE(rows.empty());
  for (const PerfDbRow& row : rows) {
    CHECK(row.problem.get(ProblemField::kDtype) == kFp16);
    CHECK(row.problem.get(ProblemField::kDir) == kBackwardData);
    CHECK(row.problem.get(ProblemField::kArch) == kGfx906);
    CHECK(row.problem.get(ProblemField::kY) == 1);
    CHECK(row.params.size() == 8);
    CHECK(row.config_id > 0);
  }
  const PerfDbRow& first = rows.front();
  CHECK(first.problem.has(ProblemField::kN));
  CHECK(first.problem.get(ProblemField::kLayout) == kNchw);
  CHECK(first.problem.get(ProblemField::kSpatialDim) == 2);

  std::vector<std::pair<std::string, int64_t>> solvers;
  REQUIRE(db.solvers(&solvers).is_ok());
  bool found = false;
  for (const auto& [name, count] : solvers) found |= name == "ConvAsm1x1U" && count == 15577;
  CHECK(found);

  std::vector<PerfDbRow> none;
  REQUIRE(db.rows("NoSuchSolver", {}, &none).is_ok());
  CHECK(none.empty());

  status = PerfDb::open(tunecast_test::data_path("miopen/perfdb/missing.db"), &db);
  CHECK(status.code() == StatusCode::kNotFound);
  CHECK(std::string(status.message()).find("missing.db") != std::string::npos);
  // A file that is not a perf DB (this test's own source).
  status = PerfDb::open(tunecast_test::source_path("tests/test_rules_perfdb.cpp"), &db);
  CHECK_FALSE(status.is_ok());
}

TEST_CASE("rules perfdb: the perf DB reader names missing tables and columns") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tunecast_perfdb_" + std::to_string(::getpid()) + ".db")).string();
  auto make_db = [&](const char* sql) {
    std::remove(path.c_str());
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  };
  PerfDb db;
  make_db("CREATE TABLE config (id INTEGER PRIMARY KEY, layout TEXT);");
  Status status = PerfDb::open(path, &db);
  CHECK(status.code() == StatusCode::kNotFound);
  CHECK(std::string(status.message()) == "perf DB " + path + " has no table perf_db");
  make_db("CREATE TABLE perf_db (id INTEGER PRIMARY KEY, solver TEXT, config INTEGER, params TEXT);"
          "CREATE TABLE config (id INTEGER PRIMARY KEY, layout TEXT, data_type TEXT, direction TEXT);");
  status = PerfDb::open(path, &db);
  CHECK(std::string(status.message()) == "perf DB " + path + ": table config has no column spatial_dim");

  const std::string config =
      "CREATE TABLE config (id INTEGER PRIMARY KEY, layout TEXT, data_type TEXT, direction TEXT, spatial_dim INT,"
      " in_channels INT, in_h INT, in_w INT, in_d INT, fil_h INT, fil_w INT, fil_d INT, out_channels INT,"
      " batchsize INT, pad_h INT, pad_w INT, pad_d INT, conv_stride_h INT, conv_stride_w INT, conv_stride_d INT,"
      " dilation_h INT, dilation_w INT, dilation_d INT, bias INT, group_count INT);"
      "CREATE TABLE perf_db (id INTEGER PRIMARY KEY, solver TEXT, config INTEGER, params TEXT);"
      "INSERT INTO config VALUES (7, 'NCHW', 'FP32', 'F', 2, 64, 28, 28, 1, 1, 1, 1, 32, 16, 0, 0, 0, 1, 1, 0,"
      " 1, 1, 0, 0, 1);"
      "INSERT INTO config VALUES (8, 'NCHW', 'FP8', 'F', 2, 64, 28, 28, 1, 1, 1, 1, 32, 16, 0, 0, 0, 1, 1, 0,"
      " 1, 1, 0, 0, 1);"
      "INSERT INTO perf_db VALUES (1, 'Good', 7, '1,2,3');"
      "INSERT INTO perf_db VALUES (2, 'Bad', 8, '1,2,3');"
      "INSERT INTO perf_db VALUES (3, 'BadParams', 7, '1,2;3');";
  make_db(config.c_str());
  REQUIRE(PerfDb::open(path, &db).is_ok());
  CHECK_FALSE(db.arch().has_value());
  std::vector<PerfDbRow> rows;
  REQUIRE(db.rows("Good", {}, &rows).is_ok());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].config_id == 7);
  CHECK(rows[0].params == std::vector<int64_t>{1, 2, 3});
  CHECK(rows[0].params_text == "1,2,3");
  CHECK(rows[0].problem.get(ProblemField::kC) == 64);
  CHECK(rows[0].problem.get(ProblemField::kK) == 32);
  CHECK(rows[0].problem.get(ProblemField::kN) == 16);
  CHECK(rows[0].problem.get(ProblemField::kH) == 28);
  CHECK_FALSE(rows[0].problem.has(ProblemField::kArch));
  status = db.rows("Bad", {}, &rows);
  CHECK(std::string(status.message()) == "perf DB " + path + ": perf_db row 2 (config 8): unknown data_type 'FP8'");
  status = db.rows("BadParams", {}, &rows);
  CHECK(std::string(status.message()) ==
        "perf DB " + path + ": perf_db row 3 (config 7): params '1,2;3' are not comma-separated integers");
  db = PerfDb();
  std::remove(path.c_str());
}

TEST_CASE("rules perfdb: parse_param_list") {
  std::vector<int64_t> values;
  CHECK(parse_param_list("4,16, 8 ,-1", &values));
  CHECK(values == std::vector<int64_t>{4, 16, 8, -1});
  CHECK_FALSE(parse_param_list("4,,8", &values));
  CHECK_FALSE(parse_param_list("4,x", &values));
  CHECK_FALSE(parse_param_list("", &values));
  CHECK_FALSE(parse_param_list("4,", &values));
  CHECK_FALSE(parse_param_list("99999999999999999999", &values));
}

// tunecast's convention for dir=B (problem_forms.h): c is the perf DB's in_channels, the forward K,
// and h x w dy's size. A MIOpenDriver user writes the forward C, K and input size: the driver line
// of every gfx906 dir=B ConvAsm1x1U row converts to that row's problem, whose tuned vector the
// rules accept; the same numbers typed as fields in the driver's order break the rules on some rows
// (and the model, trained in the DB's convention, answers another problem on all of them).
TEST_CASE("problem forms: MIOpenDriver -F 2 lines of the DB's dir=B ConvAsm1x1U rows read as the DB's problems") {
  if (!tunecast_test::have_shared_data()) {
    MESSAGE("skipped: no shared data");
    return;
  }
  const rules::CompiledRules rules = load_rules("ConvAsm1x1U");
  int rows = 0, accepted = 0, accepted_as_typed = 0;
  for (const PerfDbRow& row : load_rows("gfx906_60.db", "ConvAsm1x1U")) {
    const Problem& p = row.problem;
    if (p.get(ProblemField::kDir) != kBackwardData) continue;
    ++rows;
    const int64_t s = p.get(ProblemField::kStrideH);
    // A forward input whose 1x1 output (no padding, stride s) is dy's h x w.
    const int64_t H = s * (p.get(ProblemField::kH) - 1) + 1, W = s * (p.get(ProblemField::kW) - 1) + 1;
    const char* command = p.get(ProblemField::kDtype) == kFp16 ? "convfp16" : "conv";
    const std::string command_line = std::string("./bin/MIOpenDriver ") + command + " -n " +
                             std::to_string(p.get(ProblemField::kN)) + " -c " + std::to_string(p.get(ProblemField::kK)) +
                             " -H " + std::to_string(H) + " -W " + std::to_string(W) + " -k " +
                             std::to_string(p.get(ProblemField::kC)) + " -y 1 -x 1 -p 0 -q 0 -u " + std::to_string(s) +
                             " -v " + std::to_string(s) + " -l 1 -j 1 -m conv -g 1 -F 2 -t 1";
    Problem read;
    codegen::ProblemForm form;
    const Status status = codegen::parse_problem_any(command_line, &read, &form);
    REQUIRE_MESSAGE(status.is_ok(), std::string(status.message()));
    CHECK(form == codegen::ProblemForm::kDriver);
    for (ProblemField f : {ProblemField::kDir, ProblemField::kDtype, ProblemField::kN, ProblemField::kC, ProblemField::kK,
                           ProblemField::kH, ProblemField::kW, ProblemField::kStrideH, ProblemField::kStrideW}) {
      const std::string where = command_line + " " + problem_field_name(f);
      CHECK_MESSAGE(read.get(f) == p.get(f), where);
    }
    accepted += accepts(rules, read, row.params);
    Problem typed = p;  // the driver's -c and -k taken as c and k
    typed.set(ProblemField::kC, p.get(ProblemField::kK));
    typed.set(ProblemField::kK, p.get(ProblemField::kC));
    accepted_as_typed += accepts(rules, typed, row.params);
  }
  REQUIRE(rows > 1000);
  CHECK(accepted == rows);
  MESSAGE(rows << " dir=B rows: the rules accept " << accepted << " tuned vectors as converted, " << accepted_as_typed
                << " with c and k in the driver's order");
  CHECK(accepted_as_typed < rows);  // 7338 of 7741 on this DB: the rest break the k_mult and waves rules
}
