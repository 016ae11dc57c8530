#include "transport/rma_batch.h"

#include "aobj/status.h"

namespace aobj {

absl::Status CheckBatchBounds(const RmaBatch& batch) {
  for (const RmaOp& op : batch.ops) {
    if (op.window >= batch.windows.size()) {
      return MakeError(ErrorCode::kInternal, "RMA op names no window");
    }
    const RemoteWindow& w = batch.windows[op.window];
    if (op.length == 0 || op.remote < w.address || op.length > w.length ||
        op.remote - w.address > w.length - op.length) {
      return MakeError(ErrorCode::kDescriptorOutOfBounds,
                       "RMA operation outside its descriptor window");
    }
  }
  return absl::OkStatus();
}

}  // namespace aobj
