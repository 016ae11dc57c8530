// AOBJ_RETURN_IF_ERROR(expr): returns the absl::Status `expr` from the enclosing function when it
// is not OK (the function returns absl::Status or absl::StatusOr<T>). One definition for every
// layer.
#ifndef AOBJ_WIRE_STATUS_MACROS_H_
#define AOBJ_WIRE_STATUS_MACROS_H_

#include "absl/status/status.h"

#define AOBJ_RETURN_IF_ERROR(expr)            \
  do {                                        \
    if (absl::Status _s = (expr); !_s.ok()) { \
      return _s;                              \
    }                                         \
  } while (0)

#endif  // AOBJ_WIRE_STATUS_MACROS_H_
