// The memory-model table: the built-in models (none, TGN's GRU, JODIE's RNN, APAN's
// attention over the mailbox) with their rules and their updaters' work as the cost model
// counts it, the models registered after them, and the look-ups by kind and by name.
#include "depbloom/model/memory_model.h"

#include <deque>

#include "depbloom/core/error.h"
#include "model/tgnn_parts.h"

namespace depbloom::model {
namespace {

std::optional<ConfigProblem> mail_dt_problem(const TgnnConfig& c) {
  if (!c.mail_dt_at_event) return std::nullopt;
  return ConfigProblem{"mail_dt_at_event",
                       "a mail's age as of its event needs the GRU or RNN updater"};
}

std::optional<ConfigProblem> no_memory_rules(const TgnnConfig& c) {
  if (c.embedding != EmbeddingKind::attention)
    return ConfigProblem{"embedding",
                         "a model without memory needs the attention embedding (the identity "
                         "embedding of no memory is nothing)"};
  if (auto p = mail_dt_problem(c)) return p;
  if (c.refine)
    return ConfigProblem{"refine", "refinement corrects memory rows: it needs a memory"};
  return std::nullopt;
}

std::optional<ConfigProblem> recurrent_rules(const TgnnConfig& c) {
  if (c.mailbox != 1)
    return ConfigProblem{"mailbox", fmt::format("{} mails need the transformer updater; the GRU "
                                                "and RNN updaters read one mail",
                                                c.mailbox)};
  return std::nullopt;
}

std::optional<ConfigProblem> attention_memory_rules(const TgnnConfig& c) {
  if (c.embedding == EmbeddingKind::jodie)
    return ConfigProblem{"memory",
                         "JODIE's time projection goes with a recurrent memory, not the "
                         "transformer updater"};
  if (c.d_mem % c.memory_heads != 0)
    return ConfigProblem{
        "memory_heads",
        fmt::format("the memory width {} is not divisible by {} heads", c.d_mem, c.memory_heads)};
  return mail_dt_problem(c);
}

// RecurrentMemoryUpdater (GRU / RNN) over n rows: two input GEMMs, and backward both
// weight gradients and the time encoding's share of the input gradient (the mail, stored
// state, needs none).
void recurrent_work(WorkSink& s, const TgnnConfig& c, int64_t n, bool gru) {
  const int64_t g = (gru ? 3 : 1) * c.d_mem, d = c.d_mem;
  const int64_t in = c.d_mail() + c.d_mem_time;
  s.f(n, g, in);
  s.f(n, g, d);
  s.b(g, in, n);
  s.b(g, d, n);
  s.b(n, c.d_mem_time, g);
  const int64_t cell = gru ? 4 * d : 0;
  s.values(static_cast<double>(n * (c.d_mem_time + 2 * in + 4 * g + 3 * d + cell + 2)),
           static_cast<double>(n * (2 * in + 4 * g + 3 * d + cell + 2 * c.d_mem_time)));
  s.ops(10, 8);
}

// The updater start of the copies: the GRU / RNN reads the mail through W_ih's mail columns
// once per message, the memory through W_hh once per base row and the time encoding once
// per gap (TGL's mail time; the authors' reads each copy's own age); both input gradients
// are wanted.
void recurrent_start_work(WorkSink& s, const TgnnConfig& c, const CopyCounts& n, bool gru) {
  const int64_t d = c.d_mem, dm = c.d_mail(), tm = c.d_mem_time;
  const int64_t g = (gru ? 3 : 1) * d;
  const int64_t ages = c.mail_dt_at_event ? n.copies : n.gaps;
  s.f(n.messages, g, dm), s.f(ages, g, tm), s.f(n.bases, g, d);
  s.b(g, d, n.bases), s.b(n.bases, d, g);  // W_hh and the memory
  s.b(g, tm, ages), s.b(g, dm, n.messages), s.b(n.messages, dm, g), s.b(ages, tm, g);  // W_ih
  const int64_t cell = gru ? 4 * d : 0;
  const double io = static_cast<double>(n.copies * (4 * g + 3 * d + cell + 2) +
                                        ages * (tm * 2 + g) + n.terms * g * 3 + n.messages * g);
  s.values(io, io + static_cast<double>(ages * tm + n.messages * dm * 2));
  s.ops(14, 16);
}

void gru_work(WorkSink& s, const TgnnConfig& c, int64_t n) {
  recurrent_work(s, c, n, true);
}
void rnn_work(WorkSink& s, const TgnnConfig& c, int64_t n) {
  recurrent_work(s, c, n, false);
}
void gru_start_work(WorkSink& s, const TgnnConfig& c, const CopyCounts& n) {
  recurrent_start_work(s, c, n, true);
}
void rnn_start_work(WorkSink& s, const TgnnConfig& c, const CopyCounts& n) {
  recurrent_start_work(s, c, n, false);
}

// ApanMemoryUpdater over n rows of S mail slots: Q from the memory, K and V from [mail ||
// te(dt)], the output layer; dt = t 1^T - mail_ts is a rank-1 GEMM. The input gradient of K
// and V is formed for the time encoding, or for the mail when it is wanted.
void apan_work(WorkSink& s, const TgnnConfig& c, int64_t n, int64_t slots, bool want_mail) {
  const int64_t d = c.d_mem, rows = n * slots;
  const int64_t kv = c.d_mail() + c.d_mem_time;
  s.f(n, d, d);
  if (c.d_mem_time > 0) s.f(n, slots, 1);
  s.f(rows, d, kv, 2);
  s.f(n, d, d);
  s.b(d, d, n), s.b(n, d, d);  // output layer
  s.b(d, d, n), s.b(n, d, d);  // query (its input gradient feeds the memory's)
  s.b(d, kv, rows, 2);         // key and value weights
  if (c.d_mem_time > 0 || want_mail) s.b(rows, kv, d, 2);
  const double io = static_cast<double>(n * d * 14 + rows * (c.d_mem_time + 2 * kv + 6 * d));
  s.values(io, 2 * io);
  s.ops(18, 22);
}

void apan_update_work(WorkSink& s, const TgnnConfig& c, int64_t n) {
  apan_work(s, c, n, c.mailbox, false);
}

// APAN's start spreads the mails over the copies and runs its attention over a mailbox of
// one, with the mail's gradient.
void apan_start_work(WorkSink& s, const TgnnConfig& c, const CopyCounts& n) {
  apan_work(s, c, n.copies, 1, true);
  const double io = static_cast<double>(n.terms * c.d_mail() * 3 + n.copies * c.d_mail());
  s.values(io, io);
  s.ops(4, 3);
}

// The built-ins in MemoryKind's order, then the registered models (a deque: entries stay
// where they are as the table grows).
std::deque<MemoryModel>& memory_models() {
  static std::deque<MemoryModel> models = {
      {"none",  // no memory: one zero column per node (the memory-less, TGAT-style model)
       &make_no_memory,
       {false, false},
       &no_memory_rules,
       nullptr,
       nullptr},
      {"gru",  // TGN's GRU updater over one mail and the time since the last update
       &make_gru_memory,
       {true, false},
       &recurrent_rules,
       &gru_work,
       &gru_start_work},
      {"rnn",  // JODIE's RNN updater over one mail and the time since the last update
       &make_rnn_memory,
       {true, false},
       &recurrent_rules,
       &rnn_work,
       &rnn_start_work},
      {"transformer",  // APAN's attention of the memory over the mailbox's mails and their ages
       &make_attention_memory,
       {true, true},
       &attention_memory_rules,
       &apan_update_work,
       &apan_start_work}};
  return models;
}

}  // namespace

const MemoryModel& memory_model(MemoryKind kind) {
  const auto index = static_cast<size_t>(kind);
  DB_ASSERT(index < memory_models().size(), "memory kind {} is not in the memory-model table",
            index);
  return memory_models()[index];
}

std::optional<MemoryKind> find_memory_model(const std::string& name) {
  const std::deque<MemoryModel>& models = memory_models();
  for (size_t i = 0; i < models.size(); ++i)
    if (name == models[i].name) return static_cast<MemoryKind>(i);
  return std::nullopt;
}

std::vector<std::string> memory_update_choices() {
  std::vector<std::string> names;
  for (const MemoryModel& m : memory_models())
    if (m.plan.memory) names.emplace_back(m.name);
  return names;
}

MemoryKind register_memory_model(const MemoryModel& entry) {
  DB_ASSERT(entry.name != nullptr && entry.make != nullptr && entry.rules != nullptr,
            "a memory model needs a name, a part factory and rules");
  DB_ASSERT(!find_memory_model(entry.name), "memory model '{}' is already in the table",
            entry.name);
  memory_models().push_back(entry);
  return static_cast<MemoryKind>(memory_models().size() - 1);
}

}  // namespace depbloom::model
