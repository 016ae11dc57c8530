#include "transport/confined_ipc.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace aobj::confined {
namespace {

// Reads exactly `n` octets into `out`, keeping the first descriptor that arrives with them.
absl::Status ReadFull(int fd, char* out, size_t n, int* received_fd, bool* clean_end) {
  size_t got = 0;
  while (got < n) {
    iovec iov{out + got, n - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::DataLossError(absl::StrCat("recvmsg: ", strerror(errno)));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int passed;
        std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (*received_fd < 0) {
          *received_fd = passed;
        } else {
          close(passed);  // one descriptor per frame; more is the peer's mistake
        }
      }
    }
    if (r == 0) {
      *clean_end = got == 0;
      return absl::DataLossError("the stream ended inside a frame");
    }
    got += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

}  // namespace

// AOBJ_PEER_INPUT: a data-channel process may have been taken over by its peer.
absl::StatusOr<Reply> ParseReply(absl::string_view body) {
  FrameReader r(body);
  uint32_t op = 0;
  Reply reply;
  if (!r.U32(&op) || static_cast<Op>(op) != Op::kReply || !r.U64(&reply.id) ||
      !r.U32(&reply.code) || !r.Bytes(&reply.message, kMaxReplyMessage)) {
    return absl::DataLossError("not a reply");
  }
  reply.results = std::string(body.substr(body.size() - r.rest_size()));
  return reply;
}

absl::Status WriteFrame(int fd, absl::string_view body, int pass_fd) {
  if (body.size() > kMaxFrame) {
    return absl::InvalidArgumentError(absl::StrCat("frame of ", body.size(), " octets"));
  }
  std::string head;
  LeWriter(&head).U32(static_cast<uint32_t>(body.size()));
  iovec iov[2] = {{head.data(), head.size()}, {const_cast<char*>(body.data()), body.size()}};
  size_t skip = 0;  // octets already written
  const size_t total = head.size() + body.size();
  bool fd_sent = pass_fd < 0;
  while (skip < total) {
    iovec cur[2];
    int n = 0;
    size_t s = skip;
    for (const iovec& v : iov) {
      if (s >= v.iov_len) {
        s -= v.iov_len;
        continue;
      }
      cur[n++] = {static_cast<char*>(v.iov_base) + s, v.iov_len - s};
      s = 0;
    }
    msghdr msg{};
    msg.msg_iov = cur;
    msg.msg_iovlen = n;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (!fd_sent) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    const ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return absl::UnavailableError(absl::StrCat("sendmsg: ", strerror(errno)));
    fd_sent = true;
    skip += static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFrame(int fd, size_t max, int* received_fd) {
  *received_fd = -1;
  char head[4];
  bool clean_end = false;
  absl::Status st = ReadFull(fd, head, sizeof(head), received_fd, &clean_end);
  auto fail = [received_fd](absl::Status why) {
    if (*received_fd >= 0) close(*received_fd);
    *received_fd = -1;
    return why;
  };
  if (!st.ok()) return fail(clean_end ? absl::NotFoundError("the stream ended") : st);
  uint32_t n = 0;
  LeReader(std::string_view(head, sizeof(head))).U32(&n);
  if (n > max) return fail(absl::DataLossError(absl::StrCat("frame of ", n, " octets")));
  std::string body(n, '\0');
  bool unused = false;
  if (n > 0) {
    st = ReadFull(fd, body.data(), n, received_fd, &unused);
    if (!st.ok()) return fail(st);
  }
  return body;
}

}  // namespace aobj::confined
