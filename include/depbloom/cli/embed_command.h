// depbloom-embed: a checkpoint's node memory at a time T, for use outside depbloom
// (docs/embeddings.md). It replays the stream from its first event through every event
// with time <= T with the checkpoint's weights, as the evaluator does (evaluation pass, no
// training, writes applied, eval.batch_size batches), and writes the chosen nodes' memory,
// original ids and last-update times as .npy files with a manifest.json.
#pragma once

#include <cstdint>
#include <string>

namespace depbloom::cli {

struct EmbedRequest {
  std::string checkpoint;
  double at = 0.0;         // T: events with time <= T are replayed
  std::string nodes_file;  // one original id per line; empty: every node
  std::string out;         // the folder written (replaced whole, never half-written)
  std::string data;        // empty: the checkpoint config's data.path
};

struct EmbedResult {
  int64_t events = 0;  // events replayed
  int64_t nodes = 0;   // rows written
};

// --at's text as a time: a finite number, else a usage error naming the flag.
double parse_time(const std::string& text);

// Errors are thrown as depbloom::Error (data: a bad --nodes line, a checkpoint that does not
// fit; usage: no data to replay).
EmbedResult export_embeddings(const EmbedRequest& request);

// The command line; returns the process exit code (0, 2 usage, 3 data, 4 runtime).
int run_embed(int argc, char** argv);

}  // namespace depbloom::cli
