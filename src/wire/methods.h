// The methods of aobj.v1.ObjectService as the stacks name them, apart from any RPC framework:
// the server's request pipeline, the fast path (section 8.9) and the gRPC edge
// (control/rpc.h) share this one table.
#ifndef AOBJ_WIRE_METHODS_H_
#define AOBJ_WIRE_METHODS_H_

#include <string>

namespace aobj {

// Methods of aobj.v1.ObjectService. The order is ours; the server matches methods to the
// .proto by name (MethodFromName), so adding an rpc anywhere in the .proto is safe.
enum class Method : int {
  kOpenSession = 0,
  kRenewSession,
  kCloseSession,
  kCreateBucket,
  kDeleteBucket,
  kHeadBucket,
  kPutObject,
  kGetObject,
  kHeadObject,
  kDeleteObject,
  kCreateMultipartUpload,
  kUploadPart,
  kCompleteMultipartUpload,
  kAbortMultipartUpload,
  kListParts,
  kListMultipartUploads,
  kListBuckets,
  kListObjectsV2,
  kDeleteObjects,
  kCopyObject,
  kConfirmEndpoint,
  kGetObjects,
  kPutObjects,
  kCount,
};

// "/aobj.v1.ObjectService/PutObject".
const char* MethodPath(Method method);
// "PutObject".
const char* MethodName(Method method);
// The Method named `name` ("PutObject"), or Method::kCount for a name this build does not know.
Method MethodFromName(const std::string& name);

// Whether a request of `method` may travel on the fast path (AOBJ-DAT-167): the operations on
// one object or bucket, whose replies are small (an inline body at most). Not the session's own
// lifecycle (OpenSession, ConfirmEndpoint, RenewSession, CloseSession), and not listings or
// DeleteObjects, whose replies grow with the page; those stay on gRPC.
bool FastPathCarries(Method method);

}  // namespace aobj

#endif  // AOBJ_WIRE_METHODS_H_
