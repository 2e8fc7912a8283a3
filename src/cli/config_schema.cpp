// The DepBloom config schema: every key depbloom-train reads, declared once. TGL's
// sections (sampling, memory, gnn, train) keep TGL's names and its TGN defaults, so
// TGL's own config/*.yml load unchanged (keys DepBloom does not act on are accepted and
// say so); data, eval and run are DepBloom's. docs/configs.md is generated from this list.
#include "depbloom/cli/options.h"

namespace depbloom::cli {

void declare_depbloom_options(OptionRegistry& r) {
  r.add_int("sampling.layer", 1, "temporal neighbourhood hops (GNN layers that sample)", 0);
  r.add_int_list("sampling.neighbor", {10}, "neighbours sampled per hop, one value per hop", 1);
  r.add_enum("sampling.strategy", "recent", {"recent", "uniform"},
             "recent: the latest neighbours before the event; uniform: any earlier ones");
  r.add_int("sampling.history", 1, "snapshots sampled per hop (1 for memory-based models)", 1);
  r.add_bool("sampling.no_sample", false, "skip neighbour sampling (JODIE)");
  r.add_bool("sampling.no_neg", false,
             "TGL's APAN flag: sample neighbours for the positive endpoints only, not negatives");
  r.add_bool("sampling.prop_time", false,
             "neighbours' memory is updated at the root's time instead of their event's time");
  r.add_int("sampling.duration", 0, "TGL's snapshot duration; only 0 (no snapshots) is supported",
            0);
  r.add_int("sampling.num_thread", 0,
            "TGL's sampler threads; DepBloom uses run.threads, this key is accepted and ignored",
            0);

  r.add_enum("memory.type", "node", {"node", "none"},
             "node: per-node memory; none: memory-less TGAT-style model");
  r.add_enum("memory.memory_update", "gru", {"gru", "rnn", "transformer"},
             "memory updater: TGN's GRU, JODIE's RNN, APAN's attention over the mailbox");
  r.add_int("memory.attention_head", 2, "heads of the transformer memory updater", 1);
  r.add_enum("memory.mail_time", "read", {"read", "event"},
             "time encoded with a mail: read = TGL's (read time - last update), event = the TGN "
             "authors' (event time - previous update, fixed when written)");
  r.add_bool("memory.update_empty", false,
             "run the updater for nodes with an empty mailbox too (TGL; false keeps their "
             "memory, as the TGN authors' code does)");
  r.add_enum("memory.mail_combine", "last", {"last"},
             "how mails to one node in one batch combine (the last one is kept)");
  r.add_bool("memory.combine_node_feature", false,
             "add node features to the memory; no effect on data without node features");
  r.add_int("memory.dim_time", 100, "time-encoding width inside messages", 1);
  // 0 is TGL's TGAT.yml value with memory.type none.
  r.add_int("memory.dim_out", 100, "node memory width (0 only with memory.type none)", 0);
  r.add_int("memory.mailbox_size", 1, "mails kept per node (1 for TGN/JODIE, >1 for APAN)", 1);
  r.add_enum("memory.deliver_to", "self", {"self", "neighbors"},
             "self: mail to the event's endpoints; neighbors: also to their neighbours (APAN)");

  r.add_enum("gnn.arch", "tgn_attention", {"transformer_attention", "tgn_attention", "identity"},
             "embedding module on top of the memory: TGL's attention layer, the TGN authors' "
             "(scaled dot product as wide as the query, projection and merge MLP, no layer norm), "
             "or none");
  r.add_enum("gnn.time_transform", "none", {"none", "JODIE"},
             "JODIE: project the memory in time, h = s * (1 + w dt), on top of identity");
  r.add_enum("gnn.time_norm", "standard", {"standard", "tgl"},
             "JODIE's dt: standard = (dt - mean) / std of the training gaps (the TGN authors'), "
             "tgl = dt / (t + 1)");
  r.add_bool("gnn.use_src_emb", false, "TGL's flag, accepted; only false is supported");
  r.add_bool("gnn.use_dst_emb", false, "TGL's flag, accepted; only false is supported");
  r.add_int("gnn.layer", 1, "embedding layers (must not exceed sampling.layer)", 0);
  r.add_int("gnn.att_head", 2, "attention heads", 1);
  r.add_int("gnn.dim_time", 100, "time-encoding width in the embedding module", 1);
  r.add_int("gnn.dim_out", 100, "embedding width", 1);

  r.add_int("train.epoch", 3, "passes over the training events", 1);
  r.add_int("train.batch_size", 600, "events per training batch", 1);
  r.add_double("train.lr", 1e-4, "Adam learning rate");
  r.add_double("train.dropout", 0.1,
               "dropout in the attention layers and the APAN updater (TGL's attention: on W_o's "
               "output; the TGN authors': on the attention output)");
  r.add_double("train.att_dropout", 0.1,
               "TGL's dropout of attention weights: read for TGL's configs, not applied "
               "(train.dropout covers the attention layers)");
  r.add_double("train.weight_decay", 0, "L2 weight decay in Adam");
  r.add_int("train.patience", 0, "epochs without validation gain before stopping; 0 never stops",
            0);
  r.add_bool("train.all_on_gpu", false,
             "TGL's flag, accepted and ignored: everything lives on the run device");
  r.add_int("train.reorder", 0, "TGL's batch reordering; only 0 is supported", 0);

  // DepBloom's: how data-parallel ranks (depbloom-train --ranks P) share the stream.
  r.add_enum("strategy.name", "strict", {"strict"},
             "data-parallel strategy: strict = each batch split into one contiguous slice per "
             "rank, gradients all-reduced and the written memory and mails all-gathered after "
             "every step; with one rank every strategy is single-device training");

  r.add_string("data.path", "", "event stream file or folder; empty: the shipped WIKI stream");
  r.add_enum("data.format", "auto", {"auto", "jodie", "tgn", "tgl", "snap", "konect", "csv"},
             "file format; auto guesses it from the name and the first lines");
  r.add_enum("data.protocol", "tgn", {"tgn", "tgl", "file"},
             "train/val/test split: TGN's 70/15/15 by time, TGL's, or the one in the file");
  r.add_bool("data.drop_self_loops", false, "drop events whose source is their destination");
  r.add_bool("data.cache", true, "reuse the parsed binary cache beside the data");
  r.add_int("data.max_events", 0,
            "use only the first N events of the stream (0: all); for quick runs and tests", 0);

  r.add_int("eval.negatives", 1, "negative destinations scored per positive event", 1);
  r.add_enum("eval.negative_strategy", "random", {"random", "historical", "inductive"},
             "how negatives are drawn (random, seen edges, or edges unseen in training)");
  r.add_int("eval.batch_size", 200,
            "events per evaluation batch (200: the TGN authors' evaluation, whatever the training "
            "batch; TGL evaluates with its training batch)",
            1);
  r.add_bool("eval.new_nodes", true,
             "also report the new-node (inductive) metrics under the tgn protocol");

  r.add_int("run.seed", 0, "random seed for parameters, sampling and negatives", 0);
  r.add_string("run.device", "auto", "auto, cpu or cuda:N (auto: the first usable GPU, else CPU)");
  r.add_int("run.threads", 0,
            "CPU threads; 0 uses all cores (under mpirun: the cores over the ranks on the machine)",
            0);
  r.add_string("run.out", "runs/<time>", "run folder for the config, logs and checkpoints");
  r.add_int("run.log_every", 100, "batches between progress lines; 0 logs epochs only", 0);
  r.add_bool("run.checkpoint", true,
             "save a checkpoint of the best epoch and of the last one in the run folder");
  r.add_int("run.max_batches", 0,
            "stop each epoch after N training batches (0: all); for smoke runs", 0);
  r.add_bool("run.progress", true, "print a progress line during long epochs");
  r.add_bool("run.step_log", false,
             "write every training step's loss to steps.jsonl in the run folder (to compare "
             "runs step by step)");

  r.add_enum("dist.communicator", "auto", {"auto", "local", "mpi", "nccl"},
             "auto: nccl for CUDA ranks (when built with NCCL), else mpi, local for one rank; "
             "mpi serves CUDA ranks too, through host buffers, and lets ranks share a GPU; "
             "mpi or nccl with one rank still runs the strategy's collectives (a smoke test)");
  r.add_double("dist.timeout_s", 600,
               "with several ranks: seconds one rank may wait in a collective for the others "
               "before every rank ends with exit code 4 (a rank stopped making progress); 0 "
               "waits forever");
}

OptionRegistry depbloom_options() {
  OptionRegistry r;
  declare_depbloom_options(r);
  return r;
}

}  // namespace depbloom::cli
