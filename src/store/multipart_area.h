// Part areas of the MultipartManager (multipart.h): where uploads in progress and their parts
// live. Internal to the store layer.
//
// The manager owns all logic and ordering; an area only stores. Threading: Load() runs alone,
// before anything else. Every other method may be called from many threads at once; the manager
// calls AddUpload, PendingPart::Install and DetachUpload under its lock, so for one upload these
// never overlap. PendingPart and BlobReader objects are used by one thread at a time.
#ifndef AOBJ_STORE_MULTIPART_AREA_H_
#define AOBJ_STORE_MULTIPART_AREA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "store/multipart.h"

namespace aobj {

// Reads a stored part.
class BlobReader {
 public:
  virtual ~BlobReader() = default;
  // Reads up to out.size() bytes at `offset`; returns the count (0 at the end).
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) = 0;
};

// The bytes of one installed part; immutable.
class PartBlob {
 public:
  virtual ~PartBlob() = default;
  // The whole part in memory, or an empty span when not held in memory.
  virtual absl::Span<const uint8_t> ContiguousView() const { return {}; }
  virtual absl::StatusOr<std::unique_ptr<BlobReader>> Open() const = 0;
};

// A part being received. Destroying it before Install() leaves no trace.
class PendingPart {
 public:
  virtual ~PendingPart() = default;
  // Appends bytes; at most the size given to NewPart in total.
  virtual absl::Status Append(absl::Span<const uint8_t> data) = 0;
  // A writable view of the whole part, or empty when not supported (see ObjectWriter).
  virtual absl::Span<uint8_t> DirectBuffer() { return {}; }
  // Records `info` and makes the bytes durable, still not installed. Outside the manager's lock.
  virtual absl::Status Seal(const PartInfo& info) = 0;
  // Makes this the stored part of its number, replacing an earlier one atomically. Under the
  // manager's lock, after Seal(), once.
  virtual absl::StatusOr<std::shared_ptr<const PartBlob>> Install() = 0;
};

struct LoadedPart {
  PartInfo info;
  std::shared_ptr<const PartBlob> blob;
};

struct LoadedUpload {
  UploadInfo info;
  std::vector<LoadedPart> parts;
};

class PartArea {
 public:
  virtual ~PartArea() = default;
  // The uploads the area holds (directory area: what survived a restart); removes crash
  // leftovers. Called once, first.
  virtual absl::Status Load(std::vector<LoadedUpload>* out) = 0;
  // Records a new upload durably.
  virtual absl::Status AddUpload(const UploadInfo& upload) = 0;
  virtual absl::StatusOr<std::unique_ptr<PendingPart>> NewPart(const UploadInfo& upload,
                                                               uint32_t part_number,
                                                               uint64_t size) = 0;
  // Removes the upload from the area atomically and durably: once it returns OK, a restart no
  // longer finds the upload. Returns a token for Purge().
  virtual absl::StatusOr<std::string> DetachUpload(const UploadInfo& upload) = 0;
  // Frees what DetachUpload set aside (slow: deletes files). Outside the manager's lock.
  virtual void Purge(const std::string& token) = 0;
};

std::unique_ptr<PartArea> NewMemoryPartArea();
// The directory part area rooted at `dir` (created if missing).
absl::StatusOr<std::unique_ptr<PartArea>> OpenDirectoryPartArea(const std::string& dir);

}  // namespace aobj

#endif  // AOBJ_STORE_MULTIPART_AREA_H_
