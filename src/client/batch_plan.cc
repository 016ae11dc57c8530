#include "client/batch_plan.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj::client_internal {
namespace {

// The request in progress: its distinct buffers, the span [lo, hi) its regions cover in each,
// and per item the buffer it uses (-1: an empty region, which needs none).
struct Open {
  std::vector<const Buffer*> buffers;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  std::vector<size_t> items;
  std::vector<int> buffer_of;
  uint64_t bytes = 0;  // the spans' total: what the windows expose
};

void Finish(Open& open, const std::vector<BufferSlice>& items, std::vector<BatchRequestPlan>* out) {
  if (open.items.empty()) return;
  BatchRequestPlan plan;
  std::vector<uint64_t> base(open.buffers.size());
  uint64_t at = 0;
  for (size_t b = 0; b < open.buffers.size(); ++b) {
    base[b] = at;
    const auto [lo, hi] = open.spans[b];
    plan.windows.push_back({open.buffers[b], lo, hi - lo});
    at += hi - lo;
  }
  for (size_t k = 0; k < open.items.size(); ++k) {
    const int b = open.buffer_of[k];
    plan.items.push_back(open.items[k]);
    plan.offsets.push_back(b < 0 ? 0 : base[b] + items[open.items[k]].offset - open.spans[b].first);
  }
  out->push_back(std::move(plan));
  open = Open();
}

}  // namespace

absl::StatusOr<std::vector<BatchRequestPlan>> PlanBatchGet(const std::vector<BatchGetItem>& items,
                                                           size_t max_items, size_t max_windows,
                                                           uint64_t max_bytes) {
  std::vector<BufferSlice> regions;
  regions.reserve(items.size());
  for (const BatchGetItem& item : items) regions.push_back(item.destination);
  return PlanBatch(regions, max_items, max_windows, max_bytes, /*overlap_allowed=*/false);
}

absl::StatusOr<std::vector<BatchRequestPlan>> PlanBatch(const std::vector<BufferSlice>& items,
                                                        size_t max_items, size_t max_windows,
                                                        uint64_t max_bytes, bool overlap_allowed) {
  // Regions of one buffer must not overlap anywhere in the call (they could share a request).
  std::map<const Buffer*, std::vector<std::pair<uint64_t, size_t>>> by_buffer;
  for (size_t i = 0; i < items.size(); ++i) {
    const BufferSlice& d = items[i];
    if (d.buffer == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("item ", i, " has no buffer"));
    }
    if (d.offset > d.buffer->size() || d.length > d.buffer->size() - d.offset) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("item ", i, "'s region [", d.offset, ", +", d.length,
                                    ") lies outside its buffer of ", d.buffer->size()));
    }
    if (d.length > max_bytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("item ", i, "'s region of ", d.length,
                                    " octets exceeds the session's limit of ", max_bytes));
    }
    if (d.length > 0 && !overlap_allowed) by_buffer[d.buffer].push_back({d.offset, i});
  }
  for (auto& [buffer, regions] : by_buffer) {
    std::sort(regions.begin(), regions.end());
    for (size_t k = 1; k < regions.size(); ++k) {
      const BufferSlice& prev = items[regions[k - 1].second];
      if (prev.offset + prev.length > regions[k].first) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("the regions of items ", regions[k - 1].second, " and ",
                                      regions[k].second, " overlap"));
      }
    }
  }
  std::vector<BatchRequestPlan> out;
  Open open;
  for (size_t i = 0; i < items.size(); ++i) {
    const BufferSlice& d = items[i];
    if (open.items.size() == max_items) Finish(open, items, &out);
    if (d.length == 0) {
      open.items.push_back(i);
      open.buffer_of.push_back(-1);
      continue;
    }
    // What the windows grow by: the region itself for a new buffer; for one already in the
    // request, the part of the widened span that is new (a gap between regions counts too).
    auto growth = [&](size_t b) {
      const auto [lo, hi] = open.spans[b];
      return std::max(hi, d.offset + d.length) - std::min(lo, d.offset) - (hi - lo);
    };
    auto found = std::find(open.buffers.begin(), open.buffers.end(), d.buffer);
    const bool fits = found != open.buffers.end()
                          ? open.bytes + growth(found - open.buffers.begin()) <= max_bytes
                          : open.buffers.size() < max_windows && open.bytes + d.length <= max_bytes;
    if (!fits) {
      Finish(open, items, &out);
      found = open.buffers.end();
    }
    size_t b = 0;
    if (found == open.buffers.end()) {
      open.buffers.push_back(d.buffer);
      open.spans.push_back({d.offset, d.offset + d.length});
      open.bytes += d.length;
      b = open.buffers.size() - 1;
    } else {
      b = static_cast<size_t>(found - open.buffers.begin());
      open.bytes += growth(b);
      auto& [lo, hi] = open.spans[b];
      lo = std::min(lo, d.offset);
      hi = std::max(hi, d.offset + d.length);
    }
    open.items.push_back(i);
    open.buffer_of.push_back(static_cast<int>(b));
  }
  Finish(open, items, &out);
  return out;
}

}  // namespace aobj::client_internal
