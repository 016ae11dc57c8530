// The HTTP/2 guard's accounting (AOBJ-SEC-023, AOBJ-SEC-024): the client's and the server's
// octets, in pieces of any size and interleaved, never crash it; the streams it holds open never
// pass the bound without a kTooManyOpen verdict, which then stays; a cut for resets comes only at
// the budget and with more than four times as many resets as ended streams; the same octets fed
// whole give the same verdict as in pieces; a cut for frames carrying nothing comes exactly at
// eight times the payload and the allowance. The guard's form (Pass, AOBJ-SEC-026), fed the same
// octets with a bound on the streams it lets open, never passes the bound, passes only octets
// that the plain form accepts, and keeps what it does not pass to be offered again; what it
// passes, marked for the calls whose stream ended (AOBJ-SEC-029) or late for those it watches,
// gains only whole mark frames, at most one per HEADERS frame; a watched stream's end is reported
// at most once, and only for a stream watched.
// AOBJ_FUZZ_COVERS: src/server/h2_guard.cc
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "server/h2_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const int budget = fdp.ConsumeIntegralInRange<int>(1, 70);
  const int max_open = fdp.ConsumeIntegralInRange<int>(1, 300);
  const bool preface = fdp.ConsumeBool();
  const uint64_t allowance = fdp.ConsumeIntegralInRange<uint64_t>(0, 2048);
  const size_t limit = fdp.ConsumeIntegralInRange<size_t>(1, 16);
  aobj::H2Ledger pieces(budget, max_open, 0, allowance);
  aobj::H2Ledger gated(budget, max_open, 0, allowance);
  std::string held, passed;
  const std::string kMark(32, 'm');
  uint32_t marked_to = 0;
  bool watch = false;
  uint64_t tokens = 0;
  std::set<uint64_t> watched;  // tokens watched and not yet reported
  aobj::H2Ledger::Verdict gated_verdict = aobj::H2Ledger::Verdict::kGoOn;
  auto pass = [&] {
    if (gated_verdict != aobj::H2Ledger::Verdict::kGoOn) return;
    const size_t skip = gated.in_frame();
    std::vector<aobj::LateCall> late;
    const size_t n = gated.Pass(
        held.data(), held.size(),
        [&] {
          if (gated.open() >= limit) return false;
          if (watch) {  // every other call let open, as the guard does one passed on late
            const auto* h = reinterpret_cast<const uint8_t*>(held.data() + gated.frame_at());
            const uint32_t stream =
                ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
                0x7fffffffu;
            if (gated.Watch(stream, ++tokens)) {
              watched.insert(tokens);
              // As long as a whole mark's value, so that every added frame has one size.
              late.push_back({stream, std::string(kMark.size() + 1, 'l')});
            }
          }
          watch = !watch;
          return true;
        },
        &gated_verdict);
    // Each watched call is reported at most once: whole or large.
    for (const uint64_t t : gated.TakeEnded()) AOBJ_FUZZ_CHECK(watched.erase(t) == 1);
    for (const uint64_t t : gated.TakeLarge()) AOBJ_FUZZ_CHECK(watched.erase(t) == 1);
    AOBJ_FUZZ_CHECK(n <= held.size());
    if (gated_verdict != aobj::H2Ledger::Verdict::kGoOn) {
      AOBJ_FUZZ_CHECK(n == 0);
      return;
    }
    // AOBJ-SEC-029: marking adds whole mark frames only, at most one per HEADERS frame passed.
    const std::optional<std::string> marked =
        aobj::MarkWholeCalls(held, n, skip, kMark, &marked_to, late);
    if (marked.has_value()) {
      const size_t frame = 9 + 3 + sizeof(aobj::kGuardWholeHeader) - 1 + kMark.size();
      AOBJ_FUZZ_CHECK(marked->size() > n && (marked->size() - n) % frame == 0);
      size_t headers = 0;
      for (size_t at = skip; at + 9 <= n;) {
        const auto* h = reinterpret_cast<const uint8_t*>(held.data() + at);
        headers += h[3] == 1;
        at += 9 + ((size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2]);
      }
      AOBJ_FUZZ_CHECK((marked->size() - n) / frame <= headers);
    }
    passed.append(held, 0, n);
    held.erase(0, n);
    AOBJ_FUZZ_CHECK(gated.open() <= limit);
  };
  std::string client_all;
  if (preface) {
    client_all = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    AOBJ_FUZZ_CHECK(pieces.FromClient(client_all.data(), client_all.size()) ==
                    aobj::H2Ledger::Verdict::kGoOn);
    held = client_all;
    pass();
  }
  bool server_spoke = false;
  aobj::H2Ledger::Verdict verdict = aobj::H2Ledger::Verdict::kGoOn;
  while (fdp.remaining_bytes() > 0) {
    const bool from_client = fdp.ConsumeBool();
    const std::string piece = fdp.ConsumeRandomLengthString(256);
    if (from_client) {
      const auto before = verdict;
      verdict = pieces.FromClient(piece.data(), piece.size());
      if (before != aobj::H2Ledger::Verdict::kGoOn) AOBJ_FUZZ_CHECK(verdict == before);
      if (before == aobj::H2Ledger::Verdict::kGoOn) client_all += piece;
      held += piece;
    } else {
      pieces.FromServer(piece.data(), piece.size());
      gated.FromServer(piece.data(), piece.size());
      server_spoke = server_spoke || !piece.empty();
    }
    pass();  // what waited, and what came
    if (verdict != aobj::H2Ledger::Verdict::kTooManyOpen) {
      AOBJ_FUZZ_CHECK(pieces.open() <= static_cast<size_t>(max_open));
    }
    // Frames carrying nothing are cut exactly when they pass eight times the payload and the
    // allowance, and not before.
    if (verdict == aobj::H2Ledger::Verdict::kFrameFlood) {
      AOBJ_FUZZ_CHECK(pieces.octets() / 8 > pieces.payload() + allowance);
    } else if (verdict == aobj::H2Ledger::Verdict::kGoOn) {
      AOBJ_FUZZ_CHECK(pieces.octets() / 8 <= pieces.payload() + allowance);
    }
    if (verdict == aobj::H2Ledger::Verdict::kTooManyResets) {
      AOBJ_FUZZ_CHECK(pieces.resets() >= static_cast<uint64_t>(budget));
      AOBJ_FUZZ_CHECK(pieces.resets() > 4 * pieces.finished());
    }
  }
  // Without the server's side, the verdict depends on the client's octets alone, not on how
  // they were cut into pieces.
  if (!server_spoke) {
    aobj::H2Ledger whole(budget, max_open, 0, allowance);
    AOBJ_FUZZ_CHECK(whole.FromClient(client_all.data(), client_all.size()) == verdict);
    AOBJ_FUZZ_CHECK(whole.resets() == pieces.resets());
    // What the guard's form passed, the plain form accepts.
    if (gated_verdict == aobj::H2Ledger::Verdict::kGoOn) {
      aobj::H2Ledger plain(budget, max_open, 0, allowance);
      AOBJ_FUZZ_CHECK(plain.FromClient(passed.data(), passed.size()) ==
                      aobj::H2Ledger::Verdict::kGoOn);
    }
  }
  return 0;
}
