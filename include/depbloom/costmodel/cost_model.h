// The cost model of depbloom-train --plan --profile: prices an EpochWork (epoch_work.h) on a
// DeviceProfile, stage by stage, and gives the epoch's time with every stage in sequence
// (serial) and with the pipeline's overlap (DESIGN.md 7.3). Everything it returns is a
// model, labelled so wherever it is printed; nothing is measured here.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "depbloom/costmodel/epoch_work.h"
#include "depbloom/costmodel/step_work.h"
#include "depbloom/train/step.h"

namespace depbloom::costmodel {

// One collective's cost, as NCCL's ring model prices it: seconds per call = latency +
// steps * hop_latency + bytes * factor / bandwidth, with steps 2 (P-1) and factor 2 (P-1)/P
// for all-reduce, steps P-1 and factor (P-1)/P for all-gather(-v) (bandwidth is NCCL's bus
// bandwidth; bytes the gathered result).
struct LinkCost {
  double bandwidth = 0;    // bytes/s
  double latency = 0;      // s per call
  double hop_latency = 0;  // s per ring step
};

// A device (one rank) and its links, every number in SI units (configs/devices/*.yaml).
struct DeviceProfile {
  std::string name;
  double gemm_flops = 0;            // FLOP/s of GEMMs at the model's shapes
  double memory_bandwidth = 0;      // bytes/s of the device memory
  double op_launch = 0;             // s per op call (a kernel launch; an OpenMP region)
  double host_plan_rate = 0;        // roots + neighbour slots the host plans per second
  double host_to_device = 0;        // bytes/s of staged inputs to the device; 0: same memory
  LinkCost all_reduce, all_gather;  // all-gather-v costs as all-gather
};

// Seconds of one GEMM shape: the slower of its FLOPs and its operands' bytes, plus a launch
// per call.
double gemm_seconds(const GemmShape& g, const DeviceProfile& p, int64_t value_bytes);
// Seconds of the epoch's collectives of each kind over `ranks` ranks (0 for one rank).
double all_reduce_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p);
double exchange_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p);

struct CostPrediction {
  std::string profile;
  train::StageTimes stages;  // seconds per epoch on the critical rank of each step (serial)
  double collectives = 0;    // of which the all-reduce and exchange collectives
  double serial = 0, pipelined = 0;
  // What bounds the pipelined epoch: sample when the host lane is longest over the epoch,
  // write_back when the side lane is, else the main lane's largest stage.
  train::Stage bound = train::Stage::sample;
  StepFlops flops;  // GEMM FLOPs of the epoch over every rank
};

// GEMM FLOPs of the epoch, forward and backward, summed over every rank's steps.
StepFlops epoch_flops(const EpochWork& work, const WorkModel& wm);

// The epoch of `work` for the model `wm` on profile `p`. Per step, the critical rank is the
// one with the most local work (every step ends in a collective); the all-reduce and the
// exchanges are spread evenly over the steps. Serial: all stages one after another.
// Pipelined: three lanes overlap and the step takes the longest: the host plans the next
// step; the main lane runs gather..backward, then the all-reduce beside the urgent
// write-back, then Adam, then the urgent share of the exchange; the side lane runs the
// deferred write-back and the rest of the exchange. Never longer than serial.
CostPrediction predict_epoch(const EpochWork& work, const WorkModel& wm, const DeviceProfile& p);

}  // namespace depbloom::costmodel
