// Node classification: the frozen embedding pass, the MLP decoder and its training loop.
#include "depbloom/train/node_classifier.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "depbloom/backend/ops.h"
#include "depbloom/core/error.h"
#include "depbloom/core/philox.h"
#include "depbloom/core/timer.h"
#include "depbloom/model/loss.h"
#include "depbloom/train/metrics.h"

namespace depbloom::train {
namespace {

// Rows scored per forward when a whole split is scored: bounds the arena, not the result.
constexpr int64_t kScoreChunk = 4096;

void check_both_classes(const LabelledRows& rows, const char* split, const std::string& source) {
  const int64_t pos = rows.positives();
  if (pos == 0 || pos == rows.size())
    DB_THROW(data,
             "{}: the {} split has {} labelled events, {} of them positive: node "
             "classification needs both classes in every split (its ROC-AUC is undefined "
             "otherwise); use more events (data.max_events) or other labels",
             source, split, rows.size(), pos);
}

// x [rows.size() in [begin, end), dim]: the embedding rows of the listed events.
void gather_rows(const Tensor& x, const EmbeddingTable& emb, const int64_t* rows, int64_t count) {
  float* out = x.data<float>();
  const auto dim = static_cast<size_t>(emb.dim);
  for (int64_t i = 0; i < count; ++i)
    std::copy_n(emb.row(rows[i]), dim, out + static_cast<size_t>(i) * dim);
}

// The epoch's visiting order of the training rows: a Fisher-Yates shuffle keyed by
// (seed, epoch), the same on every run.
void shuffle(std::vector<int64_t>& order, uint64_t seed, int64_t epoch) {
  std::iota(order.begin(), order.end(), 0);
  const RngKey key{seed, static_cast<uint32_t>(RngPurpose::classify), static_cast<uint32_t>(epoch)};
  for (size_t i = order.size(); i > 1; --i) {
    const uint32_t j = uniform_below(philox_u32(key, i, 0), static_cast<uint32_t>(i));
    std::swap(order[i - 1], order[j]);
  }
}

double auc_of(MlpDecoder& decoder, const EmbeddingTable& emb, const LabelledRows& rows) {
  const std::vector<float> scores = decoder_scores(decoder, emb, rows);
  return roc_auc(scores.data(), rows.label.data(), scores.size());
}

// One epoch over the shuffled training rows; returns the mean mini-batch loss.
double train_epoch(MlpDecoder& decoder, const EmbeddingTable& emb, const LabelledRows& train,
                   const ClassifySettings& s, int64_t epoch, Arena& arena) {
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  shuffle(order, s.seed, epoch);
  std::vector<int64_t> batch_rows;
  std::vector<float> targets;
  const ops::AdamConfig adam{s.lr};
  double loss_sum = 0;
  int64_t batches = 0;
  for (int64_t begin = 0; begin < train.size(); begin += s.batch_size) {
    const int64_t count = std::min(s.batch_size, train.size() - begin);
    batch_rows.resize(static_cast<size_t>(count));
    targets.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const auto at = static_cast<size_t>(order[static_cast<size_t>(begin + i)]);
      batch_rows[static_cast<size_t>(i)] = train.row[at];
      targets[static_cast<size_t>(i)] = static_cast<float>(train.label[at]);
    }
    arena.reset();
    Tensor x = arena.alloc(DType::f32, Shape(count, emb.dim));
    gather_rows(x, emb, batch_rows.data(), count);
    Tensor logits = arena.alloc(DType::f32, Shape(count));
    const model::DropoutDraw draw{
        true,
        RngKey{s.seed, static_cast<uint32_t>(RngPurpose::classify_dropout),
               static_cast<uint32_t>(epoch)},
        ops::DropoutRows(Tensor::wrap(batch_rows.data(), Shape(count)))};
    decoder.forward(logits, x, arena, draw);
    const Tensor y = Tensor::wrap(targets.data(), Shape(count));
    float loss = 0;
    model::bce_loss_forward(Tensor::wrap(&loss, Shape(1)), logits, y);
    Tensor d_logits = arena.alloc(DType::f32, Shape(count));
    model::bce_loss_backward(d_logits, logits, y);
    decoder.store().zero_grad();
    decoder.backward(d_logits, arena);
    decoder.store().adam_step(adam);
    loss_sum += loss;
    ++batches;
  }
  return batches > 0 ? loss_sum / static_cast<double>(batches) : 0.0;
}

}  // namespace

int64_t LabelledRows::positives() const {
  return std::count_if(label.begin(), label.end(), [](uint8_t y) { return y != 0; });
}

ClassifyRows classify_rows(const data::ChronoSplit& split, const std::vector<int8_t>& labels,
                           const std::string& source) {
  const auto n = static_cast<int64_t>(labels.size());
  std::vector<uint8_t> part(static_cast<size_t>(n), 0);  // 0 train, 1 val, 2 test
  for (int64_t e : split.val) part[static_cast<size_t>(e)] = 1;
  for (int64_t e : split.test) part[static_cast<size_t>(e)] = 2;
  ClassifyRows r;
  LabelledRows* into[] = {&r.train, &r.val, &r.test};
  for (int64_t e = 0; e < n; ++e) {
    const int8_t y = labels[static_cast<size_t>(e)];
    if (y < 0) continue;
    LabelledRows& rows = *into[part[static_cast<size_t>(e)]];
    rows.row.push_back(e);
    rows.label.push_back(y != 0 ? 1 : 0);
  }
  check_both_classes(r.train, "training", source);
  check_both_classes(r.val, "validation", source);
  check_both_classes(r.test, "test", source);
  return r;
}

EmbeddingTable source_embeddings(Trainer& trainer, int64_t batch_size) {
  DB_ASSERT(batch_size > 0, "source_embeddings: batch size {}", batch_size);
  const int64_t events = trainer.stream().num_events();
  EmbeddingTable t;
  t.dim = trainer.config().model.d_out();
  t.values.resize(static_cast<size_t>(events * t.dim));
  std::vector<int64_t> all(static_cast<size_t>(events));
  std::iota(all.begin(), all.end(), 0);
  std::vector<double> wide;  // an f64 model's rows on their way to float
  trainer.replay(all, batch_size, [&](int64_t begin, int64_t count, const StepData& d) {
    const Tensor sources = d.emb.rows(0, count);  // roots: sources, destinations, negatives
    if (sources.dtype() == DType::f32) {
      ops::copy(Tensor::wrap(t.values.data() + begin * t.dim, Shape(count, t.dim)), sources);
      return;
    }
    wide.resize(static_cast<size_t>(count * t.dim));
    ops::copy(Tensor::wrap(wide.data(), Shape(count, t.dim)), sources);
    std::copy(wide.begin(), wide.end(), t.values.begin() + begin * t.dim);
  });
  return t;
}

MlpDecoder::MlpDecoder(int64_t in_features, const std::vector<int64_t>& hidden, uint64_t seed,
                       double dropout)
    : dropout_(dropout) {
  DB_ASSERT(dropout >= 0 && dropout < 1, "MlpDecoder: dropout {} outside [0, 1)", dropout);
  int64_t in = in_features;
  layers_.reserve(hidden.size() + 1);
  for (size_t i = 0; i <= hidden.size(); ++i) {
    const int64_t out = i < hidden.size() ? hidden[i] : 1;
    layers_.emplace_back(store_, "decoder.fc" + std::to_string(i), in, out);
    in = out;
  }
  store_.finalize();
  store_.initialize(seed);
  ctx_.resize(layers_.size());
  hidden_.resize(hidden.size());
  keep_.resize(hidden.size());
}

void MlpDecoder::forward(const Tensor& logits, const Tensor& x, Arena& arena,
                         const model::DropoutDraw& draw) {
  const int64_t batch = x.dim(0);
  const bool drop = draw.training && dropout_ > 0;
  Tensor in = x;
  for (size_t i = 0; i < hidden_.size(); ++i) {
    const Shape shape(batch, layers_[i].out_features());
    hidden_[i] = arena.alloc(DType::f32, shape);
    layers_[i].forward(hidden_[i], ctx_[i], in);
    ops::act_forward(ops::Act::relu, hidden_[i], hidden_[i]);
    in = hidden_[i];
    keep_[i] = Tensor{};
    if (!drop) continue;
    RngKey key = draw.key;
    key.purpose += static_cast<uint32_t>(i) << 8;
    keep_[i] = arena.alloc(DType::u8, shape);
    in = arena.alloc(DType::f32, shape);
    ops::dropout_forward(in, keep_[i], hidden_[i], dropout_, key, draw.rows);
  }
  layers_.back().forward(logits.reshape(Shape(batch, 1)), ctx_.back(), in);
}

void MlpDecoder::backward(const Tensor& d_logits, Arena& arena) {
  const int64_t batch = d_logits.numel();
  Tensor dy = d_logits.reshape(Shape(batch, 1));
  for (size_t i = layers_.size(); i-- > 0;) {
    // The first layer's input is the frozen embedding: no gradient goes there.
    Tensor dx = i > 0 ? arena.alloc(DType::f32, Shape(batch, layers_[i].in_features())) : Tensor{};
    layers_[i].backward(dx, dy, ctx_[i]);
    if (i > 0 && keep_[i - 1].defined()) ops::dropout_backward(dx, dx, keep_[i - 1], dropout_);
    if (i > 0) ops::act_backward(ops::Act::relu, dx, dx, hidden_[i - 1]);
    dy = dx;
  }
}

std::vector<float> decoder_scores(MlpDecoder& decoder, const EmbeddingTable& emb,
                                  const LabelledRows& rows) {
  std::vector<float> scores(static_cast<size_t>(rows.size()));
  Arena arena;
  for (int64_t begin = 0; begin < rows.size(); begin += kScoreChunk) {
    const int64_t count = std::min(kScoreChunk, rows.size() - begin);
    arena.reset();
    Tensor x = arena.alloc(DType::f32, Shape(count, emb.dim));
    gather_rows(x, emb, rows.row.data() + begin, count);
    decoder.forward(Tensor::wrap(scores.data() + begin, Shape(count)), x, arena);
  }
  return scores;
}

ClassifyResult train_classifier(const EmbeddingTable& emb, const ClassifyRows& rows,
                                const ClassifySettings& s, const ClassifyObserver& on_epoch) {
  DB_ASSERT(s.batch_size > 0 && s.epochs > 0, "train_classifier: batch {} epochs {}", s.batch_size,
            s.epochs);
  MlpDecoder decoder(emb.dim, s.hidden, s.seed, s.dropout);
  const Tensor& values = decoder.store().values();
  std::vector<float> best(static_cast<size_t>(values.numel()));
  ClassifyResult r;
  r.best_val_auc = -1;
  Arena arena;
  for (int64_t epoch = 1; epoch <= s.epochs; ++epoch) {
    Stopwatch watch;
    ClassifyEpoch e;
    e.epoch = epoch;
    e.loss = train_epoch(decoder, emb, rows.train, s, epoch, arena);
    e.val_auc = auc_of(decoder, emb, rows.val);
    e.seconds = watch.seconds();
    r.epochs.push_back(e);
    if (on_epoch) on_epoch(e);
    if (e.val_auc > r.best_val_auc) {
      r.best_val_auc = e.val_auc;
      r.best_epoch = epoch;
      ops::copy(Tensor::wrap(best.data(), Shape(values.numel())), values);
    }
    if (s.patience > 0 && epoch - r.best_epoch >= s.patience) break;
  }
  ops::copy(values, Tensor::wrap(best.data(), Shape(values.numel())));
  r.test_auc = auc_of(decoder, emb, rows.test);
  return r;
}

}  // namespace depbloom::train
