// `tunecast tune MODEL|KERNEL --problems FILE`: a list of problems tuned by a queue over --workers
// benchmark processes, every measurement recorded (--record DB), resumable after a kill, split
// into --shard i/N for a batch scheduler (docs/fleet.md).
#pragma once

#include <string>
#include <vector>

#include "cli.h"
#include "tunecast/search.h"

namespace tunecast::cli {

// The options `tune` takes for a problem list, besides the search's (the caller parses those).
extern const std::vector<std::string> kTuneListOptions;  // problems, workers, shard, output, max-restarts

// Runs the list: `options` are the search options of every problem, `names` the parameter names
// (the model's order). Returns the exit status (0: every selected problem finished; 1: some did
// not, or a benchmark process broke the protocol; 2: bad arguments).
int tune_problem_list(const Args& args, const LoadedModel& loaded, const SearchOptions& options, double bench_timeout,
                      const std::vector<std::string>& names);

}  // namespace tunecast::cli
