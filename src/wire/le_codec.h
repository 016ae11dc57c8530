// The one little-endian writer and bounds-checked reader for formats aobj encodes by hand (the
// FileStore object header and multipart records, RadosStore's records, listing tokens, the
// messages between the server and its data-channel processes). Fields are written one by one,
// never by a cast of a packed struct; every read checks that the octets are there first
// (STYLE.md).
#ifndef AOBJ_WIRE_LE_CODEC_H_
#define AOBJ_WIRE_LE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace aobj {

class LeWriter {
 public:
  explicit LeWriter(std::string* out) : out_(out) {}  // `out` must outlive the writer
  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Int(v, 2); }
  void U32(uint32_t v) { Int(v, 4); }
  void U64(uint64_t v) { Int(v, 8); }
  void Bytes(std::string_view b) { out_->append(b); }
  // A u32 length, then the octets.
  void String32(std::string_view b) {
    U32(static_cast<uint32_t>(b.size()));
    Bytes(b);
  }

 private:
  void Int(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string* out_;  // not owned
};

// Every read checks bounds first and returns false, changing nothing, when the input is
// exhausted.
class LeReader {
 public:
  explicit LeReader(std::string_view in) : in_(in) {}  // `in`'s octets must outlive the reader
  bool U8(uint8_t* v) {
    uint64_t x;
    if (!Int(1, &x)) return false;
    *v = static_cast<uint8_t>(x);
    return true;
  }
  bool U16(uint16_t* v) {
    uint64_t x;
    if (!Int(2, &x)) return false;
    *v = static_cast<uint16_t>(x);
    return true;
  }
  bool U32(uint32_t* v) {
    uint64_t x;
    if (!Int(4, &x)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool U64(uint64_t* v) { return Int(8, v); }
  bool Bytes(size_t n, std::string_view* out) {
    if (in_.size() - pos_ < n) return false;
    *out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // A u32 length, then that many octets, at most `max` of them (more is malformed).
  bool String32(size_t max, std::string_view* out) {
    const size_t at = pos_;
    uint32_t n;
    if (!U32(&n) || n > max || !Bytes(n, out)) {
      pos_ = at;
      return false;
    }
    return true;
  }
  size_t remaining() const { return in_.size() - pos_; }
  // The octets not read yet.
  std::string_view rest() const { return in_.substr(pos_); }

 private:
  bool Int(size_t n, uint64_t* v) {
    if (in_.size() - pos_ < n) return false;
    *v = 0;
    for (size_t i = 0; i < n; ++i) *v |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += n;
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace aobj

#endif  // AOBJ_WIRE_LE_CODEC_H_
