// Dynamic node classification (docs/node_classification.md), the TGN authors' supervised
// protocol on a trained link-prediction model: the frozen model runs once over the whole
// stream in time order (source_embeddings), and a small MLP decoder learns each event's
// label from its source node's embedding at the event's time, trained on the stored rows
// for several epochs. Validation ROC-AUC picks the epoch whose decoder is tested.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/data/split.h"
#include "depbloom/model/dropout.h"
#include "depbloom/model/linear.h"
#include "depbloom/model/parameters.h"
#include "depbloom/train/trainer.h"

namespace depbloom::train {

// The classify.* keys (docs/configs.md).
struct ClassifySettings {
  int64_t epochs = 10;
  double lr = 3e-4;
  std::vector<int64_t> hidden = {80, 10};  // the decoder's hidden widths, in order
  int64_t patience = 5;                    // epochs without a validation gain (0: never stop)
  int64_t batch_size = 100;                // the decoder's mini-batch (rows)
  double dropout = 0;                      // after each hidden ReLU, in training only
  std::string labels;                      // a (node, time, label) file; empty: the stream's
  uint64_t seed = 0;                       // the decoder's init and shuffles (run.seed)
};

// Host rows of float embeddings, row-major [rows x dim].
struct EmbeddingTable {
  int64_t dim = 0;
  std::vector<float> values;

  int64_t rows() const { return dim > 0 ? static_cast<int64_t>(values.size()) / dim : 0; }
  const float* row(int64_t i) const { return values.data() + i * dim; }
};

// The labelled rows of one split: indices into an EmbeddingTable (= stream events) and
// their labels (0 or 1).
struct LabelledRows {
  std::vector<int64_t> row;
  std::vector<uint8_t> label;

  int64_t size() const { return static_cast<int64_t>(row.size()); }
  int64_t positives() const;
};

struct ClassifyRows {
  LabelledRows train, val, test;
};

// The classification splits of `events` stream events: val and test are the link-prediction
// split's, train every other event (those before validation, held-out nodes' included, as
// the TGN authors' supervised run has them). labels[e] < 0 leaves event e out, else
// labels[e] != 0 is a positive. A split without a positive or without a negative is a data
// error naming it (its AUC would be undefined); `source` names the labels in it.
ClassifyRows classify_rows(const data::ChronoSplit& split, const std::vector<int8_t>& labels,
                           const std::string& source);

// The frozen model's embedding of every event's source node at the event's time, event e
// in row e: the node state reset, then evaluation's forward pass over the whole stream in
// time order in batches of `batch_size` (memory carries on; no gradients, nothing trains).
EmbeddingTable source_embeddings(Trainer& trainer, int64_t batch_size);

// in -> hidden[0] -> ... -> 1 Linear layers with ReLU (then dropout, in training) between
// them, on the CPU in f32, its parameters in one store (drawn from `seed`) that one Adam step
// updates.
class MlpDecoder {
 public:
  MlpDecoder(int64_t in_features, const std::vector<int64_t>& hidden, uint64_t seed,
             double dropout = 0);
  MlpDecoder(const MlpDecoder&) = delete;
  MlpDecoder& operator=(const MlpDecoder&) = delete;

  // logits [B] of x [B, in]; keeps views into `arena` for backward. In training (`draw`),
  // hidden layer i's dropout masks come from draw.key with the layer in its purpose
  // (+ i << 8) and draw.rows (each row's event), never from the batch a row falls in.
  void forward(const Tensor& logits, const Tensor& x, Arena& arena,
               const model::DropoutDraw& draw = {});
  // Accumulates the gradients of the last forward's logits, given d_logits [B].
  void backward(const Tensor& d_logits, Arena& arena);
  model::ParameterStore& store() { return store_; }

 private:
  model::ParameterStore store_;
  std::vector<model::Linear> layers_;
  std::vector<model::LinearContext> ctx_;
  std::vector<Tensor> hidden_;  // each hidden layer's output after its ReLU
  std::vector<Tensor> keep_;    // each hidden layer's dropout mask (undefined: none drawn)
  double dropout_;
};

// The decoder's logits of `rows`, in their order.
std::vector<float> decoder_scores(MlpDecoder& decoder, const EmbeddingTable& emb,
                                  const LabelledRows& rows);

struct ClassifyEpoch {
  int64_t epoch = 0;
  double loss = 0;     // mean training BCE over the epoch's mini-batches
  double val_auc = 0;  // ROC-AUC on validation after the epoch
  double seconds = 0;
};

struct ClassifyResult {
  std::vector<ClassifyEpoch> epochs;
  int64_t best_epoch = 0;
  double best_val_auc = 0;
  double test_auc = 0;  // the best epoch's decoder on the test rows
};

using ClassifyObserver = std::function<void(const ClassifyEpoch&)>;

// Trains a decoder (plain BCE on the labels as they are, shuffled mini-batches, Adam) for up
// to s.epochs epochs, stopping after s.patience epochs without a validation gain, then tests
// the best epoch's decoder. `on_epoch` sees every epoch as it ends.
ClassifyResult train_classifier(const EmbeddingTable& emb, const ClassifyRows& rows,
                                const ClassifySettings& s, const ClassifyObserver& on_epoch = {});

}  // namespace depbloom::train
