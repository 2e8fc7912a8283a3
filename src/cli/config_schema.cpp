// The DepBloom config schema: every key depbloom-train reads, declared once and bound to
// its RunConfig field, whose initialiser is the key's default. TGL's sections (sampling,
// memory, gnn, train) keep TGL's names and its TGN defaults, so TGL's own config/*.yml load
// unchanged (keys DepBloom does not act on are accepted and say so); data, eval and run are
// DepBloom's. docs/configs.md is generated from this list.
#include "depbloom/cli/options.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/model/memory_model.h"
#include "depbloom/partition/partition_config.h"

namespace depbloom::cli {

const NameTable<MemoryType>& memory_type_names() {
  static const NameTable<MemoryType> names{{MemoryType::node, "node"}, {MemoryType::none, "none"}};
  return names;
}

const NameTable<MailCombine>& mail_combine_names() {
  static const NameTable<MailCombine> names{{MailCombine::last, "last"}};
  return names;
}

const NameTable<GnnArch>& gnn_arch_names() {
  static const NameTable<GnnArch> names{{GnnArch::transformer_attention, "transformer_attention"},
                                        {GnnArch::tgn_attention, "tgn_attention"},
                                        {GnnArch::identity, "identity"}};
  return names;
}

const NameTable<TimeTransform>& time_transform_names() {
  static const NameTable<TimeTransform> names{{TimeTransform::none, "none"},
                                              {TimeTransform::jodie, "JODIE"}};
  return names;
}

namespace {

// Two-way TGL choices held as the trainer's flags.
const NameTable<bool> kSamplingStrategies{{false, "recent"}, {true, "uniform"}};
const NameTable<bool> kMailTimes{{false, "read"}, {true, "event"}};
const NameTable<bool> kDeliverTo{{false, "self"}, {true, "neighbors"}};
const NameTable<bool> kTimeNorms{{true, "standard"}, {false, "tgl"}};
const NameTable<train::RefineAggregate> kRefineAggregates{{train::RefineAggregate::last, "last"},
                                                          {train::RefineAggregate::mean, "mean"}};

const NameTable<model::RefineStart> kRefineStarts{{model::RefineStart::identity, "identity"},
                                                  {model::RefineStart::updater, "updater"}};

const NameTable<train::LrScaling> kLrScalings{{train::LrScaling::none, "none"},
                                              {train::LrScaling::sqrt, "sqrt"},
                                              {train::LrScaling::linear, "linear"}};

const NameTable<DType> kDTypes{{DType::f32, "f32"}, {DType::f64, "f64"}};

std::vector<std::string> communicator_choices() {
  std::vector<std::string> names = dist::communicator_kind_names().names();
  names.insert(names.begin(), "auto");
  return names;
}

// The field a key binds to: a path into RunConfig.
#define FIELD(path)            \
  [](RunConfig & c) -> auto& { \
    return c.path;             \
  }

// TGL's sampling and memory sections.
void declare_sampling_memory(OptionRegistry& r) {
  r.bind("sampling.layer", FIELD(sampling.layer),
         "temporal neighbourhood hops (GNN layers that sample)", 0);
  r.bind("sampling.neighbor", FIELD(sampling.neighbor),
         "neighbours sampled per hop, one value per hop", 1);
  r.bind("sampling.strategy", FIELD(trainer.uniform_sampling), kSamplingStrategies,
         "recent: the latest neighbours before the event; uniform: any earlier ones");
  r.bind("sampling.history", FIELD(sampling.history),
         "snapshots sampled per hop (1 for memory-based models)", 1);
  r.bind("sampling.no_sample", FIELD(sampling.no_sample), "skip neighbour sampling (JODIE)");
  r.bind("sampling.no_neg", FIELD(sampling.no_neg),
         "TGL's APAN flag: sample neighbours for the positive endpoints only, not negatives");
  r.bind("sampling.prop_time", FIELD(trainer.prop_time),
         "neighbours' memory is updated at the root's time instead of their event's time");
  r.bind("sampling.duration", FIELD(sampling.duration),
         "TGL's snapshot duration; only 0 (no snapshots) is supported", 0);
  r.bind("sampling.num_thread", FIELD(sampling.num_thread),
         "TGL's sampler threads, accepted and ignored: the sample stage runs on the OpenMP team "
         "(run.threads), or on one thread where a pipelined CPU rank plans ahead on its side "
         "thread (docs/cost_model.md)",
         0);

  r.bind("memory.type", FIELD(memory.type), memory_type_names(),
         "node: per-node memory; none: memory-less TGAT-style model");
  r.bind_choice("memory.memory_update", FIELD(memory.update), model::memory_update_choices(),
                "memory updater: TGN's GRU, JODIE's RNN, APAN's attention over the mailbox");
  r.bind("memory.attention_head", FIELD(trainer.model.memory_heads),
         "heads of the transformer memory updater", 1);
  r.bind("memory.mail_time", FIELD(trainer.model.mail_dt_at_event), kMailTimes,
         "time encoded with a mail: read = TGL's (read time - last update), event = the TGN "
         "authors' (event time - previous update, fixed when written)");
  r.bind("memory.update_empty", FIELD(memory.update_empty),
         "run the updater for nodes with an empty mailbox too (TGL; false keeps their "
         "memory, as the TGN authors' code does)");
  r.bind("memory.mail_combine", FIELD(memory.mail_combine), mail_combine_names(),
         "how mails to one node in one batch combine (the last one is kept)");
  r.bind("memory.combine_node_feature", FIELD(memory.combine_node_feature),
         "add node features to the memory; no effect on data without node features");
  r.bind("memory.dim_time", FIELD(trainer.model.d_mem_time), "time-encoding width inside messages",
         1);
  // 0 is TGL's TGAT.yml value with memory.type none.
  r.bind("memory.dim_out", FIELD(trainer.model.d_mem),
         "node memory width (0 only with memory.type none)", 0);
  r.bind("memory.mailbox_size", FIELD(trainer.model.mailbox),
         "mails kept per node (1 for TGN/JODIE, >1 for APAN)", 1);
  r.bind("memory.deliver_to", FIELD(trainer.deliver_to_neighbours), kDeliverTo,
         "self: mail to the event's endpoints; neighbors: also to their neighbours (APAN)");
}

// DepBloom's: how data-parallel ranks (depbloom-train --ranks P) share the stream; the
// train::StrategySettings the strategy table checks.
void declare_strategy(OptionRegistry& r) {
  r.bind_choice("strategy.name", FIELD(trainer.strategy.name), train::strategy_names(),
                "data-parallel strategy: strict = each batch split into one contiguous slice per "
                "rank, gradients all-reduced and the written memory and mails all-gathered after "
                "every step; depbloom = the stream cut into windows, each window's events split "
                "by a node partition into one sub-chain per rank, node state exchanged only at "
                "window ends (docs/strategies.md); with one rank every strategy is single-device "
                "training");
  // The depbloom strategy's window plan (docs/strategies.md); strict ignores them.
  r.bind("partition.window_steps", FIELD(trainer.strategy.partition.window_steps),
         "steps per temporal window: W = window_steps x train.batch_size events (depbloom)", 1);
  r.bind("partition.method", FIELD(trainer.strategy.partition.method),
         partition::partition_method_names(),
         "how a window's nodes are split over the ranks: metis (k-way on the window's "
         "interaction graph), fennel (streaming, warm-started from the previous window) or hash "
         "(node id mod ranks) (depbloom)");
  r.bind("partition.imbalance", FIELD(trainer.strategy.partition.imbalance),
         "bound on a window's most loaded part: its events / the mean over the ranks "
         "(depbloom)");
}

// TGL's gnn and train sections, the data-parallel strategy and its window plan.
void declare_gnn_train(OptionRegistry& r) {  // NOLINT(readability-function-size): a key table
  r.bind("gnn.arch", FIELD(gnn.arch), gnn_arch_names(),
         "embedding module on top of the memory: TGL's attention layer, the TGN authors' "
         "(scaled dot product as wide as the query, projection and merge MLP, no layer norm), "
         "or none");
  r.bind("gnn.time_transform", FIELD(gnn.time_transform), time_transform_names(),
         "JODIE: project the memory in time, h = s * (1 + w dt), on top of identity");
  r.bind("gnn.time_norm", FIELD(trainer.standardise_time), kTimeNorms,
         "JODIE's dt: standard = (dt - mean) / std of the training gaps (the TGN authors'), "
         "tgl = dt / (t + 1)");
  r.bind("gnn.use_src_emb", FIELD(gnn.use_src_emb),
         "TGL's flag, accepted; only false is supported");
  r.bind("gnn.use_dst_emb", FIELD(gnn.use_dst_emb),
         "TGL's flag, accepted; only false is supported");
  r.bind("gnn.layer", FIELD(trainer.model.layers),
         "embedding layers (must not exceed sampling.layer)", 0);
  r.bind("gnn.att_head", FIELD(trainer.model.heads), "attention heads", 1);
  r.bind("gnn.dim_time", FIELD(trainer.model.d_gnn_time),
         "time-encoding width in the embedding module", 1);
  r.bind("gnn.dim_out", FIELD(trainer.model.d_emb), "embedding width", 1);

  r.bind("train.epoch", FIELD(fit.epochs), "passes over the training events", 1);
  r.bind("train.batch_size", FIELD(trainer.batch_size), "events per training batch", 1);
  r.bind("train.lr", FIELD(trainer.lr), "Adam learning rate");
  r.bind("train.lr_scaling", FIELD(trainer.lr_schedule.scaling), kLrScalings,
         "the rate scaled to the global train.batch_size B over train.lr_reference_batch B0: "
         "none, sqrt (lr x sqrt(B / B0)) or linear (lr x B / B0)");
  r.bind("train.lr_reference_batch", FIELD(trainer.lr_schedule.reference_batch),
         "B0 of train.lr_scaling: the global batch train.lr was tuned at", 1);
  r.bind("train.warmup_steps", FIELD(trainer.lr_schedule.warmup_steps),
         "linear warm-up: optimiser step t (from 0, counted over the whole run, resumes "
         "included) trains at min(1, (t + 1) / warmup_steps) of the scaled rate; 0: none",
         0);
  r.bind("train.dropout", FIELD(trainer.model.dropout),
         "dropout in the attention layers and the APAN updater (TGL's attention: on W_o's "
         "output; the TGN authors': on the attention output)");
  r.bind("train.att_dropout", FIELD(tgl_train.att_dropout),
         "TGL's dropout of attention weights: read for TGL's configs, not applied "
         "(train.dropout covers the attention layers)");
  r.bind("train.weight_decay", FIELD(trainer.weight_decay), "L2 weight decay in Adam");
  r.bind("train.patience", FIELD(fit.patience),
         "epochs without validation gain before stopping; 0 never stops", 0);
  r.bind("train.target_val_ap", FIELD(fit.target_val_ap),
         "a validation per-batch-mean AP to reach: the first epoch reaching it is recorded in "
         "metrics.jsonl (reached_target: epoch, steps, events, training seconds); 0: none");
  r.bind("train.stop_at_target", FIELD(fit.stop_at_target),
         "stop after the epoch that reaches train.target_val_ap (train.patience still stops "
         "earlier when it comes first)");
  r.bind("train.all_on_gpu", FIELD(tgl_train.all_on_gpu),
         "TGL's flag, accepted and ignored: everything lives on the run device");
  r.bind("train.reorder", FIELD(tgl_train.reorder), "TGL's batch reordering; only 0 is supported",
         0);

  declare_strategy(r);

  // Intra-batch memory refinement (DESIGN.md 7.2, docs/refine.md).
  r.bind("refine.micro_batches", FIELD(trainer.refine_micro_batches),
         "micro-batches per step for intra-batch memory refinement (1: off, no refiner "
         "parameters); rows read after a node's earlier in-batch events get a learned correction",
         1);
  r.bind("refine.hidden", FIELD(trainer.model.refine_hidden), "hidden width of the refiner's MLP",
         1);
  r.bind("refine.aggregate", FIELD(trainer.refine_aggregate), kRefineAggregates,
         "how a row's earlier in-batch messages combine: the latest, or their mean");
  r.bind("refine.start", FIELD(trainer.model.refine_start), kRefineStarts,
         "what a refined row's learned correction starts from: the row itself, or the model's "
         "own memory updater applied to it with the row's aggregated in-batch message (trained "
         "through)");
  r.bind("refine.coherence_weight", FIELD(trainer.model.coherence_weight),
         "weight of the coherence loss: the mean squared distance between a refined row and "
         "what the updater gives when it applies the row's earlier in-batch messages in order "
         "(a constant target), added to the training loss (0: off; no effect with one "
         "micro-batch)");
  r.bind("refine.coherence_sample", FIELD(trainer.refine_coherence_sample),
         "share of the refined rows the coherence loss is computed on, drawn per row with the "
         "event-keyed random numbers (in (0, 1])");

  // Critical-path pipelining (DESIGN.md 7.3, docs/strategies.md).
  r.bind("pipeline.enabled", FIELD(trainer.pipeline.enabled),
         "apply the rows the next pipeline.horizon steps read at once and the rest on a side "
         "thread overlapped with the next step (same results as off)");
  r.bind("pipeline.horizon", FIELD(trainer.pipeline.horizon),
         "steps of lookahead: a row written now and read within them is urgent (never past a "
         "depbloom window end)",
         1);
}

// Where the events come from and how they are read and split (docs/data.md).
void declare_data(OptionRegistry& r) {
  r.bind("data.path", FIELD(data.path),
         "event stream file or folder; empty: the shipped WIKI stream");
  r.bind_choice("data.format", FIELD(load.format), data::format_choices(),
                "file format; auto guesses it from the name and the first lines");
  r.bind("data.protocol", FIELD(split.protocol), data::split_protocol_names(),
         "train/val/test split: TGN's 70/15/15 by time, TGL's, the one in the file, or TGB's");
  r.bind("data.drop_self_loops", FIELD(load.drop_self_loops),
         "drop events whose source is their destination");
  r.bind("data.cache", FIELD(load.use_cache), "reuse the parsed binary cache beside the data");
  r.bind("data.max_events", FIELD(data.max_events),
         "use only the first N events of the stream (0: all); for quick runs and tests", 0);
  r.bind("data.cache_dir", FIELD(load.cache_dir),
         "folder for the parsed cache; empty: .depbloom-cache beside the data");
  r.bind("data.edge_features", FIELD(load.edge_features),
         "edge features as a .npy file, one row per event of the file; empty: the format's own "
         "(TGN's ml_<name>.npy, TGL's edge_features.npy) or none");
  r.bind("data.node_features", FIELD(load.node_features),
         "node features as a .npy file, one row per node id; empty: the format's own "
         "(ml_<name>_node.npy, node_features.npy) or none");
  r.bind("data.tgb_negatives", FIELD(load.tgb_negatives),
         "folder of TGB's fixed val/test negatives as tools/tgb_negatives.py writes them; "
         "empty: none (eval.negative_strategy: tgb needs it)");
  r.bind("data.weight_as_feature", FIELD(load.weight_as_feature),
         "KONECT `src dst weight time`: keep the weight as a 1-wide edge feature");
  r.bind("data.columns.src", FIELD(load.columns.src), "csv: 0-based column of the source id", 0);
  r.bind("data.columns.dst", FIELD(load.columns.dst), "csv: column of the destination id", 0);
  r.bind("data.columns.time", FIELD(load.columns.time), "csv: column of the timestamp", 0);
  r.bind("data.columns.label", FIELD(load.columns.label), "csv: column of a label; -1: none", -1);
  r.bind("data.columns.split", FIELD(load.columns.split),
         "csv: column of a split (0 train, 1 val, 2 test) for data.protocol: file; -1: none", -1);
  r.bind("data.columns.first_feature", FIELD(load.columns.first_feature),
         "csv: first edge-feature column, features run to the end of the row; -1: none", -1);
  r.bind("data.columns.header", FIELD(load.columns.header),
         "csv: the first line is a header (and must not look like data)");
  r.bind("data.columns.delimiter", FIELD(load.columns.delimiter),
         "csv: the field delimiter, one character; ' ' splits on runs of spaces and tabs");
  r.bind("data.columns.comment", FIELD(load.columns.comment),
         "csv: lines starting with this character are skipped; empty: none");
  r.bind("data.columns.bipartite", FIELD(load.columns.bipartite),
         "csv: src and dst are separate id spaces (users and items)");
  r.bind("data.seed", FIELD(split.seed),
         "seed of the tgn protocol's draw of held-out new nodes (apart from run.seed)", 0);
}

// Evaluation, the run itself and its ranks.
void declare_eval_run_dist(OptionRegistry& r) {
  r.bind("eval.negatives", FIELD(trainer.eval_negatives),
         "negative destinations scored per positive event", 1);
  r.bind("eval.negative_strategy", FIELD(trainer.eval_strategy),
         graph::eval_negative_strategy_names(),
         "how negatives are drawn (random, seen edges, edges unseen in training, or TGB's fixed "
         "sets from data.tgb_negatives)");
  r.bind("eval.batch_size", FIELD(trainer.eval_batch_size),
         "events per evaluation batch (200: the TGN authors' evaluation, whatever the training "
         "batch; TGL evaluates with its training batch)",
         1);
  r.bind("eval.new_nodes", FIELD(trainer.new_nodes),
         "also report the new-node (inductive) metrics under the tgn protocol");

  r.bind("run.seed", FIELD(trainer.seed), "random seed for parameters, sampling and negatives", 0);
  r.bind("run.device", FIELD(run.device),
         "auto, cpu or cuda:N (auto: the first usable GPU, else CPU)");
  r.bind("run.threads", FIELD(run.threads),
         "CPU threads of the OpenMP team; 0 uses all cores (under mpirun: the cores over the "
         "ranks on the machine); pipeline.enabled adds one side thread not counted here",
         0);
  r.bind("run.tf32", FIELD(run.tf32),
         "on a GPU, f32 GEMMs use cuBLAS's TF32 tensor-op math (faster, about 10 mantissa "
         "bits); off: exact f32. The CPU backend ignores it");
  r.bind("run.out", FIELD(run.out), "run folder for the config, logs and checkpoints");
  r.bind("run.log_every", FIELD(run.log_every),
         "batches between progress lines; 0 logs epochs only", 0);
  r.bind("run.checkpoint", FIELD(fit.checkpoints),
         "save a checkpoint of the best epoch and of the last one in the run folder");
  r.bind("run.max_batches", FIELD(trainer.max_batches),
         "stop each epoch after N training batches (0: all); for smoke runs", 0);
  r.bind("run.progress", FIELD(run.progress), "print a progress line during long epochs");
  r.bind("run.step_log", FIELD(fit.step_log),
         "write every training step's loss to steps.jsonl in the run folder (to compare "
         "runs step by step)");
  r.bind("run.profile_ops", FIELD(trainer.profile_ops),
         "also list the op calls per training step by op kind (metrics.jsonl's "
         "calls.by_kind_per_step, and --plan's); the totals are always reported");
  r.bind("run.dtype", FIELD(trainer.dtype), kDTypes,
         "f32, or f64 on the CPU only (slower; for comparing runs without rounding noise)");

  r.bind_choice("dist.communicator", FIELD(dist.communicator), communicator_choices(),
                "auto: nccl for CUDA ranks (when built with NCCL), else mpi, local for one rank; "
                "mpi serves CUDA ranks too, through host buffers, and lets ranks share a GPU; "
                "mpi or nccl with one rank still runs the strategy's collectives (a smoke test)");
  r.bind("dist.timeout_s", FIELD(dist.timeout_s),
         "with several ranks: seconds one rank may wait in a collective for the others "
         "before every rank ends with exit code 4 (a rank stopped making progress); 0 "
         "waits forever");
}

// depbloom-train --classify: the node classifier trained on a checkpoint's frozen embeddings.
void declare_classify(OptionRegistry& r) {
  r.bind("classify.epochs", FIELD(classify.epochs),
         "--classify: most epochs of the decoder over the stored embeddings", 1);
  r.bind("classify.lr", FIELD(classify.lr), "--classify: the decoder's Adam learning rate");
  r.bind("classify.hidden", FIELD(classify.hidden),
         "--classify: the MLP decoder's hidden widths (ReLU between layers, one logit out)", 1);
  r.bind("classify.patience", FIELD(classify.patience),
         "--classify: stop after this many epochs without a validation ROC-AUC gain (0: never)", 0);
  r.bind("classify.batch_size", FIELD(classify.batch_size),
         "--classify: labelled events per decoder mini-batch", 1);
  r.bind("classify.dropout", FIELD(classify.dropout),
         "--classify: dropout after each hidden ReLU of the decoder, in training (the TGN "
         "authors' decoder: 0.1)");
  r.bind("classify.labels", FIELD(classify.labels),
         "--classify: a file of node,time,label lines (empty: the stream's label column, "
         "JODIE's state_label; docs/node_classification.md)");
}

// depbloom-stream: streaming inference from a checkpoint (docs/streaming.md).
void declare_stream(OptionRegistry& r) {
  r.bind("stream.batch_size", FIELD(stream.batch_size),
         "depbloom-stream: events per applied batch (the queries read with them are answered "
         "when it is applied); equal to eval.batch_size, the test split streamed through it "
         "gives --eval-only's scores",
         1);
  r.bind("stream.max_delay_ms", FIELD(stream.max_delay_ms),
         "depbloom-stream: apply a batch that is not full once its first line waited this "
         "long (0: only full batches, the end of the input and SIGTERM apply one)",
         0);
  r.bind("stream.new_node_capacity", FIELD(stream.new_node_capacity),
         "depbloom-stream: node ids unseen in the loaded stream that get a fresh (zero) "
         "memory; a line with a new id beyond them is rejected",
         0);
  r.bind("stream.event_capacity", FIELD(stream.event_capacity),
         "depbloom-stream: events the session can apply (their edge features are kept for "
         "the neighbour lists); an event beyond them is rejected",
         0);
}

#undef FIELD

}  // namespace

void declare_depbloom_options(OptionRegistry& r) {
  declare_sampling_memory(r);
  declare_gnn_train(r);
  declare_data(r);
  declare_eval_run_dist(r);
  declare_classify(r);
  declare_stream(r);
}

OptionRegistry depbloom_options() {
  OptionRegistry r;
  declare_depbloom_options(r);
  return r;
}

}  // namespace depbloom::cli
