// The cost model of depbloom-train --plan --profile: prices an EpochWork (epoch_work.h) on a
// DeviceProfile, stage by stage, and gives the epoch's time with every stage in sequence
// (serial) and with the pipeline's overlap (DESIGN.md 7.3). Everything it returns is a
// model, labelled so wherever it is printed; nothing is measured here.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/costmodel/epoch_work.h"
#include "depbloom/costmodel/step_work.h"
#include "depbloom/train/step.h"

namespace depbloom::costmodel {

// One collective's cost as NCCL's ring model prices it (src/graph/tuning.cc): seconds per
// call = latency + steps * hop_latency + bytes * factor / bandwidth, with steps 2 (P-1) and
// factor 2 (P-1)/P for all-reduce, steps P-1 and factor (P-1)/P for all-gather(-v)
// (bandwidth is NCCL's bus bandwidth; bytes the gathered result). That is NCCL's Simple
// protocol. With ll_bandwidth_share > 0 the LL protocol is priced too (its own latencies, a
// share of the bus bandwidth) and a call takes the cheaper of the two, as NCCL picks the
// protocol of the shortest modelled time for each message size.
struct LinkCost {
  double bandwidth = 0;           // bytes/s
  double latency = 0;             // s per call (Simple)
  double hop_latency = 0;         // s per ring step (Simple)
  double ll_latency = 0;          // s per call (LL)
  double ll_hop_latency = 0;      // s per ring step (LL)
  double ll_bandwidth_share = 0;  // LL's share of `bandwidth`; 0: Simple only
};

// A measured step time: the device's seconds of one training step (gather through optimise;
// not planning, the write-back or collectives) at `batch` events per rank.
struct StepTimePoint {
  double batch = 0;
  double device_seconds = 0;
};
// The measured points of one model (workload_name), batches strictly increasing.
struct StepCurve {
  std::string model;
  std::vector<StepTimePoint> points;
};

// A device (one rank) and its links, every number in SI units (configs/devices/*.yaml).
struct DeviceProfile {
  std::string name;
  double gemm_flops = 0;               // FLOP/s of GEMMs at the model's shapes
  double memory_bandwidth = 0;         // bytes/s of the device memory
  double op_launch = 0;                // s per op call (a kernel launch; an OpenMP region)
  double host_plan_rate = 0;           // roots + neighbour slots one host core plans per second
  int host_threads = 1;                // host cores that plan one rank's steps
  double host_to_device = 0;           // bytes/s of staged inputs to the device; 0: same memory
  double upload_latency = -1;          // s per host-to-device upload; < 0: op_launch
  LinkCost all_reduce, all_gather;     // all-gather-v costs as all-gather
  std::vector<StepCurve> step_curves;  // where one matches the model: its device lane
};

// The name a step curve is keyed by: tgn, jodie, apan or tgat for the built-in compositions
// of memory and embedding, "" for any other (priced by the roofline).
std::string workload_name(const model::TgnnConfig& m);
// The curve's device seconds at `batch` events: linear between points; below the first point
// the first point's time (a small step is launch-bound: fewer events save nothing measured);
// above the last, the last segment's slope (one point: proportional to the batch).
double curve_seconds(const std::vector<StepTimePoint>& points, double batch);
// Seconds of one call of `bytes` over `link` with NCCL's `steps` and bandwidth `factor`: the
// cheaper of Simple and (when the profile has it) LL.
double link_call_seconds(const LinkCost& link, double bytes, double steps, double factor);

// Seconds of one GEMM shape: the slower of its FLOPs and its operands' bytes, plus a launch
// per call.
double gemm_seconds(const GemmShape& g, const DeviceProfile& p, int64_t value_bytes);
// The factor on the per-layer estimates' op calls (all but uploads) that makes the epoch's
// mean step launch what the work model counted: its CUDA launches on a device with its own
// memory (host_to_device > 0: every op a kernel, gemm_bias and affine_grad two), else its op
// calls; 1 when nothing was counted. The stages keep the estimates' shares.
double launch_scale(const EpochWork& work, const WorkModel& wm, const DeviceProfile& p);
// Seconds of the epoch's collectives of each kind over `ranks` ranks (0 for one rank). The
// counts hold calls and bytes, not each call's size: a kind's calls are priced at their mean
// size, except that all-reduce calls of `gradient_bytes` (the gradients' one all-reduce)
// are told apart from the rest (the small ones, such as a loss's) when it is > 0.
double all_reduce_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p,
                          int64_t gradient_bytes = 0);
double exchange_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p);

struct CostPrediction {
  std::string profile;
  train::StageTimes stages;  // seconds per epoch on the critical rank of each step (serial)
  double collectives = 0;    // of which the all-reduce and exchange collectives
  // Of `stages`: the waits for the slowest rank at each step's collective (max - mean of the
  // ranks' local seconds), in write_back at exchange steps, in reduce at the others.
  double sync_wait = 0;
  double serial = 0, pipelined = 0;
  // What bounds the pipelined epoch: sample when the host lane is longest over the epoch,
  // write_back when the side lane is, else the main lane's largest stage.
  train::Stage bound = train::Stage::sample;
  StepFlops flops;          // GEMM FLOPs of the epoch over every rank
  double launch_scale = 1;  // the launches priced / the per-layer estimates' (launch_scale)
};

// GEMM FLOPs of the epoch, forward and backward, summed over every rank's steps.
StepFlops epoch_flops(const EpochWork& work, const WorkModel& wm);

// The epoch of `work` for the model `wm` on profile `p`, its op calls scaled by launch_scale.
// Every step ends in a collective, so it lasts as long as its slowest rank: serial, the
// ranks' mean stages plus the wait for the slowest (sync_wait), then the step's share of the
// all-reduce and the exchanges (spread evenly over the steps). Pipelined: per rank three lanes
// overlap: the host plans the next step; the main lane runs gather..backward, then the all-reduce
// beside the urgent write-back, then Adam, then the urgent share of the exchange; the side lane
// runs the deferred write-back and the rest of the exchange; the step takes the longest lane of any
// rank. Never longer than serial.
CostPrediction predict_epoch(const EpochWork& work, const WorkModel& wm, const DeviceProfile& p);

}  // namespace depbloom::costmodel
