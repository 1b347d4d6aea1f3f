// `tenax report RUN_DIR [-o FILE.html]`: one self-contained HTML page (inline SVG and CSS, no
// script, no network, no other file) showing what a run did and survived, from its event logs
// alone (run_history.hpp), and a short text summary on stdout. The page has:
//  - a summary (status, steps, processes, ranks, wall time, work lost);
//  - "What the run survived": every fault, when, what tenax did, and the steps recomputed,
//    compute lost and downtime (zero where nothing was lost);
//  - charts over steps: each metric the workload reports (loss, residual, loss scale, ...; log
//    scale where it spans decades), step time with one line per rank (the slowest rank named),
//    micro-batch, pool memory allocated and reserved; and over wall time the telemetry samples
//    (host RSS, pool, and GPU utilisation, temperature, power where NVML gave them); event
//    markers on every chart;
//  - every event line, and the per-rank step times on several ranks.
// It works on a run that is still going, one that crashed, and logs with torn lines.
//
// Exit statuses: 0 when the page was written, 2 for a path that is not a run directory, 1 when
// the page cannot be written.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "run_history.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace tenax::tools {

// The page for `run`.
[[nodiscard]] std::string render_report_html(const RunHistory& run);

// The text summary printed on stdout (a few lines; `page` is where the HTML went).
void print_report_summary(const RunHistory& run, const std::filesystem::path& page,
                          std::ostream& out);

// Reads `run_dir`, writes the page to `output` (RUN_DIR/report.html when empty) through a
// temporary file renamed into place, prints the summary; returns the exit status. Throws
// UsageError for a bad run directory or an output that exists and is not a regular file (a
// device, a FIFO, a directory, a symbolic link: refused before anything is read or written),
// IoError when the page cannot be written.
[[nodiscard]] int run_report(const std::filesystem::path& run_dir,
                             const std::filesystem::path& output, std::ostream& out);

// Adds the `report` subcommand to the CLI; running it stores its exit status in `exit_code`.
void add_report_command(CLI::App& app, int& exit_code);

}  // namespace tenax::tools
