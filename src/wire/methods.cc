#include "wire/methods.h"

#include <cstddef>
#include <string>

namespace aobj {
namespace {

constexpr const char* kNames[] = {"OpenSession",
                                  "RenewSession",
                                  "CloseSession",
                                  "CreateBucket",
                                  "DeleteBucket",
                                  "HeadBucket",
                                  "PutObject",
                                  "GetObject",
                                  "HeadObject",
                                  "DeleteObject",
                                  "CreateMultipartUpload",
                                  "UploadPart",
                                  "CompleteMultipartUpload",
                                  "AbortMultipartUpload",
                                  "ListParts",
                                  "ListMultipartUploads",
                                  "ListBuckets",
                                  "ListObjectsV2",
                                  "DeleteObjects",
                                  "CopyObject",
                                  "ConfirmEndpoint",
                                  "GetObjects",
                                  "PutObjects"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Method::kCount));

// "/aobj.v1.ObjectService/<name>" for every method, built once.
const std::string* Paths() {
  static const std::string* paths = [] {
    auto* p = new std::string[static_cast<int>(Method::kCount)];
    for (int i = 0; i < static_cast<int>(Method::kCount); ++i) {
      p[i] = std::string("/aobj.v1.ObjectService/") + kNames[i];
    }
    return p;
  }();
  return paths;
}

}  // namespace

const char* MethodPath(Method method) { return Paths()[static_cast<int>(method)].c_str(); }
const char* MethodName(Method method) { return kNames[static_cast<int>(method)]; }

Method MethodFromName(const std::string& name) {
  for (int i = 0; i < static_cast<int>(Method::kCount); ++i) {
    if (name == kNames[i]) return static_cast<Method>(i);
  }
  return Method::kCount;
}

bool FastPathCarries(Method method) {
  switch (method) {
    case Method::kCreateBucket:
    case Method::kDeleteBucket:
    case Method::kHeadBucket:
    case Method::kPutObject:
    case Method::kGetObject:
    case Method::kHeadObject:
    case Method::kDeleteObject:
    case Method::kCopyObject:
    case Method::kCreateMultipartUpload:
    case Method::kUploadPart:
    case Method::kCompleteMultipartUpload:
    case Method::kAbortMultipartUpload:
    case Method::kGetObjects:  // its reply is bounded (AOBJ-OBJ-242)
    case Method::kPutObjects:  // likewise (AOBJ-OBJ-250)
      return true;
    default:
      return false;
  }
}

}  // namespace aobj
