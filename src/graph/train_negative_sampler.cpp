// Training negatives and the destination range they are drawn from.
#include <algorithm>

#include "depbloom/core/error.h"
#include "depbloom/core/philox.h"
#include "depbloom/graph/negative_sampler.h"

namespace depbloom::graph {

DestinationRange DestinationRange::of(const data::EventStream& stream) {
  DestinationRange range;
  range.begin = stream.bipartite ? stream.num_users : 0;
  range.end = stream.num_nodes;
  return range;
}

TrainNegativeSampler::TrainNegativeSampler(DestinationRange range, uint64_t seed)
    : range_(range), seed_(seed) {
  DB_ASSERT(range.begin >= 0 && range.end > range.begin,
            "empty destination range [{}, {}) for negative sampling", range.begin, range.end);
}

int32_t TrainNegativeSampler::draw(int64_t event, int32_t j, uint32_t epoch) const {
  const RngKey key{seed_, static_cast<uint32_t>(RngPurpose::negative_train), epoch};
  const Philox4 bits = philox_draw(key, static_cast<uint64_t>(event), static_cast<uint32_t>(j / 4));
  return range_.begin +
         static_cast<int32_t>(uniform_below(bits.v[j % 4], static_cast<uint32_t>(range_.size())));
}

namespace {

// Negatives of one event: one Philox call serves four of them, the same words as draw().
inline void fill_row(const RngKey& key, DestinationRange range, int64_t event, int32_t per_event,
                     int32_t* row) {
  const uint32_t size = static_cast<uint32_t>(range.size());
  for (int32_t j0 = 0; j0 < per_event; j0 += 4) {
    const Philox4 bits =
        philox_draw(key, static_cast<uint64_t>(event), static_cast<uint32_t>(j0 / 4));
    const int32_t lanes = std::min(4, per_event - j0);
    for (int32_t w = 0; w < lanes; ++w) {
      row[j0 + w] = range.begin + static_cast<int32_t>(uniform_below(bits.v[w], size));
    }
  }
}

}  // namespace

void TrainNegativeSampler::sample(int64_t first_event, int64_t count, int32_t per_event,
                                  uint32_t epoch, int32_t* out) const {
  DB_ASSERT(first_event >= 0 && count >= 0 && per_event >= 1,
            "bad negative request: events [{}, +{}), {} per event", first_event, count, per_event);
  const RngKey key{seed_, static_cast<uint32_t>(RngPurpose::negative_train), epoch};
  if (count * per_event < 4096) {  // inline: an if-clause region allocates a team
    for (int64_t i = 0; i < count; ++i)
      fill_row(key, range_, first_event + i, per_event, out + i * per_event);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    fill_row(key, range_, first_event + i, per_event, out + i * per_event);
  }
}

void TrainNegativeSampler::sample_events(const int64_t* events, int64_t count, int32_t per_event,
                                         uint32_t epoch, int32_t* out) const {
  DB_ASSERT(count >= 0 && per_event >= 1, "bad negative request: {} events, {} per event", count,
            per_event);
  const RngKey key{seed_, static_cast<uint32_t>(RngPurpose::negative_train), epoch};
  if (count * per_event < 4096) {  // inline: an if-clause region allocates a team
    for (int64_t i = 0; i < count; ++i)
      fill_row(key, range_, events[i], per_event, out + i * per_event);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    fill_row(key, range_, events[i], per_event, out + i * per_event);
  }
}

}  // namespace depbloom::graph
