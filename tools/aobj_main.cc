// aobj: command-line client for AOBJ/1 servers. A thin main over aobj::Client.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "aobj/client.h"
#include "aobj/credentials.h"
#include "aobj/status.h"
#include "cli_retry.h"
#include "cli_s3.h"
#include "tool_util.h"

namespace {

constexpr char kUsage[] = R"(aobj: command-line client for AOBJ/1 (S3 object access over RDMA/UCX)

Usage: aobj [flags] COMMAND ARGS...

Commands (in the habits of `aws s3`; remote locations are aobj://BUCKET/KEY):
  cp SRC DST              copy a file or object: local -> aobj:// (upload), aobj:// -> local
                          (download; '-' for standard output), aobj:// -> aobj:// (server-side
                          copy); with --recursive, a directory or every object under a prefix;
                          a wildcard ('aobj://b/logs/*.gz', quoted) takes what it matches
  mv SRC DST              cp, then delete each source once its copy succeeded
  sync SRC DST            make a prefix or directory hold what another holds (aws s3 sync):
                          copies what is new, differs in size, or is newer (the object's
                          LastModified against the file's mtime, which downloads set); --delete
                          removes what the source lacks, and only when every copy succeeded
  ls [aobj://BUCKET[/PREFIX]]   list buckets, or objects and common prefixes ("PRE") under a
                          prefix; --recursive lists every key, --summarize adds totals
  rm aobj://BUCKET/KEY    delete an object (succeeds if it does not exist); --recursive deletes
                          every object under the prefix (batch deletes of 1000); a wildcard
                          deletes what it matches
  mb aobj://BUCKET        create a bucket
  rb aobj://BUCKET        delete an empty bucket; --force deletes its objects first
  stat aobj://BUCKET/KEY  show an object's metadata, user metadata included
  put FILE BUCKET/KEY     upload FILE as an object (data moves by the server's RMA read)
  get BUCKET/KEY FILE     download an object into FILE ('-' for standard output)
  head BUCKET/KEY         the same as stat
  session                 open a session and show what the server negotiated
  completion bash|zsh     print a shell completion script (source it, e.g. from ~/.bashrc)
  man                     print this text as a manual page (aobj man | man -l -); the build
                          installs it as aobj(1)
  mpu ls BUCKET[/PREFIX]  list the bucket's multipart uploads in progress
  mpu abort BUCKET/KEY UPLOAD_ID   abort a multipart upload and discard its parts
  (ls, rm, mb, rb and stat also take BUCKET/KEY without the aobj:// scheme)

Flags:
  --endpoint HOST:PORT[,HOST:PORT...]  server control channel (default: AOBJ_ENDPOINT, else
                          127.0.0.1:7878); several gateways of one store: cp, mv and sync
                          spread their transfers over them and over the gateways the first
                          one lists, and move a lost gateway's transfers to another (said on
                          stderr); other commands use the first that answers
  --tls-ca FILE           use TLS, trusting the server certificate signed by this CA
                          (default: AOBJ_TLS_CA; without it the channel is plaintext)
  --tls-cert FILE         client certificate for mutual TLS (with --tls-key)
  --tls-key FILE          client private key for mutual TLS
  --tls-server-name NAME  name expected in the server certificate
  --credentials FILE      "ACCESS_KEY_ID SECRET" file (default: AOBJ_ACCESS_KEY_ID and
                          AOBJ_SECRET_ACCESS_KEY, else AOBJ_CREDENTIALS_FILE, else the profile)
  --profile NAME          the profile of ~/.aobj/credentials and ~/.aobj/config to use
                          (default: AOBJ_PROFILE, else "default"; the AWS key names
                          aws_access_key_id and aws_secret_access_key are accepted there)
  --checksum crc32c|crc64nvme   end-to-end checksum (default crc32c: every AOBJ/1 server must
                          offer it, AOBJ-DAT-022, and CPUs compute it in hardware. crc64nvme:
                          a 64-bit check, fewer undetected errors on very large objects, where
                          the server offers the CRC64NVME capability; `aobj session` says)
  --content-type TYPE     content type stored with put and cp uploads (and cp copies with
                          --metadata-directive REPLACE)
  --metadata NAME=VALUE   user metadata (x-amz-meta-NAME) for uploads; repeatable
  --metadata-directive COPY|REPLACE   server-side copies: keep the source's content type and
                          metadata (COPY, the default) or take the flags' (REPLACE)
  --range bytes=A-B|bytes=A-|bytes=-N   cp download of part of an object
  --if-match ETAG         uploads: only overwrite this version; downloads, stat and copy
                          sources: only if the object has this ETag (PreconditionFailed)
  --if-none-match ETAG|*  uploads: '*' creates only (PreconditionFailed if the key exists);
                          downloads and stat: NotModified when the ETag matches
  --recursive             cp, mv, ls, rm: every object under the prefix / every file of a
                          directory
  --exclude PATTERN       cp, mv, rm, sync: leave out names that match PATTERN (relative to the
                          source directory or prefix; '*' matches across '/', '?' one character,
                          [...] a class); repeatable
  --include PATTERN       take names that match PATTERN again; the last --exclude or --include
                          that matches a name decides, as in aws s3 (--exclude '*' --include
                          '*.txt': only .txt files)
  --dryrun                cp, mv, rm, sync: print what would be done ("(dryrun) upload: ..."),
                          do nothing
  --delete                sync: delete what the destination has and the source lacks (filters
                          apply: an excluded name is kept)
  --size-only             sync: files of equal size are the same, whatever their times
  --exact-timestamps      sync downloads: copy same-sized objects unless the times are equal
                          (default, as aws s3: only when the local file is newer)
  --compare-etag          sync: where one side has an MD5 ETag (single PUTs with --etag md5),
                          compare contents by MD5 instead of times (reads each local file of
                          the same size)
  --jobs N                cp, mv, sync: files moved at once (default: the session's max_in_flight, at
                          most 16; a multipart upload counts as 4), as s5cmd does
  --force                 rb: delete the bucket's objects first
  --summarize             ls: print the number and total size of the objects
  --fsync                 cp, mv, sync downloads: make each file durable (fsync) before it is
                          renamed into place (default off, as aws s3 and s5cmd: the rename
                          alone makes a file appear whole or not at all, but a power cut may
                          lose what the kernel had not written; fsync halves the rate of a
                          download of many small files here)
  --no-batch              cp, mv, sync: one GET or PUT per file; by default small files (up to
                          256 KiB, 256 of them or 1 MiB at a time) travel together in one
                          GetObjects or PutObjects request (spec 9.16, 9.17) where the server
                          offers BATCH_GET or BATCH_PUT (uploads with --metadata or
                          preconditions go one PUT per file)
  --chunk-size BYTES      cp downloads move in ranged GETs of this size (default 64 MiB), each
                          pinned to the same version with If-Match
  --multipart-threshold BYTES   cp uploads of files this large or larger are multipart
                          uploads (default 64 MiB; 0: never)
  --part-size BYTES       part size of those uploads (default 16 MiB; larger when a file would
                          need more than 10000 parts, and at least the server's minimum part
                          size, which it announces: 5 MiB by default)
  --no-progress           no progress bar (shown on stderr when it is a terminal)
  --no-inline             always use the RMA data channel, even for small bodies
  --etag md5|opaque       the ETags the server gives what this command uploads (default md5:
                          the MD5 of the content, as S3, which tools compare with local files;
                          it costs the server an MD5 pass, about 0.7 GB/s per core. opaque: a
                          single PUT gets a new random version tag "<32 hex>-0", spec
                          AOBJ-OBJ-016, and each part of a multipart upload a random part ETag,
                          AOBJ-OBJ-254, so large uploads go several times faster). Copies keep
                          MD5 ETags
  --require-hardware-protection   refuse servers whose data channel is emulated
  --net-devices LIST      the network devices UCX may use for the data channel, as
                          UCX_NET_DEVICES (which wins when set). Default lo, loopback only, so
                          that nothing leaves the machine by surprise; name the RDMA or
                          Ethernet devices to reach another host (mlx5_0:1, eth0; `ucx_info -d`
                          lists them). UCX picks the transports (RDMA verbs, shared memory, TCP)
                          on those devices; `aobj session` shows the memory protection it got
  --timeout SECONDS       deadline of each request (default 120; fractions allowed): past it
                          the request fails DEADLINE_EXCEEDED; a data request that ends so
                          shuts the data channel (spec 7.5), and later ones in the same
                          command fail DATA_CHANNEL_UNAVAILABLE
  --max-attempts N        cp, mv, sync: tries of each transfer (default 5, or AOBJ_MAX_ATTEMPTS;
                          1: no retry), as boto3's max_attempts. A failure that may pass (the
                          server restarting, a lost connection or session, a busy server, any
                          error the spec calls retryable) is tried again after a pause that
                          doubles from about 0.5 s, with a new session where the old one is
                          lost; a download resumes after its last whole chunk (--chunk-size).
                          A request that got no reply is sent again only once the server told
                          what became of it (AOBJ-ERR-011): an upload or copy whose object
                          holds its octets, or a delete whose object is gone, is done; a GET
                          goes again once its session is gone
  --json                  ls, stat, head, session: one JSON object per line (ls: one per bucket,
                          object, common prefix and --summarize total, each with a "type")
  --quiet                 print nothing on success
  --help                  this text (`aobj help COMMAND` or `aobj COMMAND --help`: one command)
  --version               the version of this client and of the protocol it speaks

Exit status: 0 on success, 1 when the operation failed (the AOBJ error and its S3 name are
printed), 2 on a usage error.
)";

int Usage(const std::string& msg) {
  std::cerr << "aobj: " << msg << "\n(run aobj --help for usage)\n";
  return 2;
}

// The flags that take no value.
constexpr const char* kBareFlags[] = {"no-inline",    "require-hardware-protection",
                                      "quiet",        "recursive",
                                      "force",        "summarize",
                                      "no-progress",  "json",
                                      "dryrun",       "delete",
                                      "size-only",    "exact-timestamps",
                                      "compare-etag", "fsync",
                                      "no-batch"};

constexpr char kVersion[] = "aobj " AOBJ_VERSION_STRING " (AOBJ/1 protocol version 1)";

// The lines of kUsage that describe `cmd` (its entry under Commands, continuation lines
// included), with the flags every command takes. Empty when `cmd` is not a command.
std::string CommandHelp(const std::string& cmd) {
  const std::string usage = kUsage;
  std::string entry;
  bool in = false;
  size_t from = usage.find("Commands");
  const size_t flags = usage.find("\nFlags:");
  for (size_t at = usage.find('\n', from) + 1; at < flags;) {
    const size_t end = usage.find('\n', at);
    const std::string line = usage.substr(at, end - at);
    at = end + 1;
    const bool starts_entry = line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ';
    if (starts_entry) in = line.rfind("  " + cmd + " ", 0) == 0 || line == "  " + cmd;
    if (in) entry += line + "\n";
  }
  if (entry.empty()) return "";
  // The flags that change what this command does, as kUsage describes them.
  static const std::map<std::string, std::vector<std::string>> kFlagsOf = {
      {"cp", {"recursive",     "exclude",
              "include",       "dryrun",
              "jobs",          "max-attempts",
              "etag",          "content-type",
              "metadata",      "metadata-directive",
              "range",         "if-match",
              "if-none-match", "checksum",
              "chunk-size",    "fsync",
              "no-batch",      "multipart-threshold",
              "part-size",     "no-progress",
              "no-inline"}},
      {"mv",
       {"recursive", "exclude", "include", "dryrun", "jobs", "max-attempts", "etag", "content-type",
        "metadata", "metadata-directive", "checksum", "multipart-threshold", "part-size",
        "no-progress", "no-batch"}},
      {"sync",
       {"delete", "dryrun", "exclude", "include", "size-only", "exact-timestamps", "compare-etag",
        "fsync", "jobs", "max-attempts", "etag", "content-type", "metadata", "checksum",
        "multipart-threshold", "part-size", "no-progress", "no-batch"}},
      {"ls", {"recursive", "summarize", "json"}},
      {"rm", {"recursive", "exclude", "include", "dryrun"}},
      {"rb", {"force"}},
      {"stat", {"if-match", "if-none-match", "json"}},
      {"put",
       {"content-type", "metadata", "if-match", "if-none-match", "checksum", "no-inline", "etag"}},
      {"get", {"checksum", "no-inline"}},
      {"head", {}},
      {"mb", {}},
      {"session", {"require-hardware-protection", "no-inline", "json"}},
      {"mpu", {}},
  };
  std::string flag_lines;
  if (auto it = kFlagsOf.find(cmd); it != kFlagsOf.end()) {
    for (const std::string& name : it->second) {
      bool take = false;
      for (size_t at = flags + 1; at < usage.size();) {
        const size_t end = usage.find('\n', at);
        const std::string line = usage.substr(at, end - at);
        at = end == std::string::npos ? usage.size() : end + 1;
        if (line.rfind("  --", 0) == 0)
          take = line.rfind("  --" + name + " ", 0) == 0 || line == "  --" + name;
        else if (line.rfind("    ", 0) != 0)
          take = false;
        if (take) flag_lines += line + "\n";
      }
    }
  }
  return absl::StrCat("Usage: aobj [flags] ", cmd, " ...\n\n", entry,
                      flag_lines.empty() ? "" : "\nFlags of this command:\n", flag_lines,
                      "\nEvery command also takes the flags of `aobj --help` (--endpoint, "
                      "--credentials,\n--profile, TLS, --quiet, --timeout ...). Exit status: 0 "
                      "on success, 1 when the\noperation failed, 2 on a usage error.\n");
}

// The commands and flags that kUsage documents, for completion scripts: the help text is the
// one source.
std::vector<std::string> Documented(bool flags) {
  std::vector<std::string> out;
  const std::string usage = kUsage;
  const size_t commands = usage.find("\nCommands"), flag_part = usage.find("\nFlags:");
  for (size_t at = 0; at < usage.size();) {
    const size_t end = std::min(usage.find('\n', at), usage.size());
    const std::string line = usage.substr(at, end - at);
    at = end + 1;
    if (line.size() < 3 || line[0] != ' ' || line[1] != ' ' || line[2] == ' ') continue;
    const std::string word = line.substr(2, line.find(' ', 2) - 2);
    if (flags && at > flag_part && word.rfind("--", 0) == 0) out.push_back(word);
    if (!flags && at > commands && at < flag_part && word[0] != '(' &&
        std::find(out.begin(), out.end(), word) == out.end()) {
      out.push_back(word);
    }
  }
  for (const char* extra : {"help", "completion", "man"}) {
    if (!flags && std::find(out.begin(), out.end(), extra) == out.end()) out.push_back(extra);
  }
  return out;
}

// `aobj completion bash|zsh`: a completion script for the commands and flags above.
int Completion(const std::string& shell) {
  if (shell != "bash" && shell != "zsh") return Usage("usage: aobj completion bash|zsh");
  std::string commands, flags;
  for (const std::string& c : Documented(false))
    absl::StrAppend(&commands, commands.empty() ? "" : " ", c);
  for (const std::string& f : Documented(true))
    absl::StrAppend(&flags, flags.empty() ? "" : " ", f);
  if (shell == "zsh") std::cout << "autoload -U +X bashcompinit && bashcompinit\n";
  std::cout << "# aobj " AOBJ_VERSION_STRING " completion: source it, or put it where your shell\n"
            << "# loads completions (bash: /etc/bash_completion.d/aobj).\n"
            << "_aobj() {\n"
            << "  local cur=${COMP_WORDS[COMP_CWORD]} i command=\n"
            << "  local commands=\"" << commands << "\"\n"
            << "  local flags=\"" << flags << "\"\n"
            << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
            << "    case ${COMP_WORDS[i]} in -*) ;; *) command=${COMP_WORDS[i]}; break ;; esac\n"
            << "  done\n"
            << "  if [[ $cur == -* ]]; then\n"
            << "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
            << "  elif [[ -z $command ]]; then\n"
            << "    COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
            << "  else\n"
            << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
            << "  fi\n"
            << "}\n"
            << "complete -o default -F _aobj aobj\n";
  return 0;
}

// `text` for roff: backslashes and hyphens escaped, a leading '.' or '\'' made literal.
std::string RoffEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

// `aobj man`: kUsage as a manual page, so that aobj(1) says what --help says. An entry of
// kUsage ("  TERM   description" with indented continuation lines) becomes a .TP paragraph.
int ManPage() {
  const std::string usage = kUsage;
  std::vector<std::string> lines = absl::StrSplit(usage, '\n');
  std::string out = absl::StrCat(".TH AOBJ 1 \"\" \"aobj ", AOBJ_VERSION_STRING,
                                 "\" \"User Commands\"\n.SH NAME\naobj \\- ");
  // The first line: "aobj: what it is".
  out += RoffEscape(lines[0].substr(lines[0].find(": ") + 2)) + "\n";
  std::string section;
  std::string pending;  // the description of the current entry, joined
  auto flush = [&] {
    if (!pending.empty()) out += RoffEscape(pending) + "\n";
    pending.clear();
  };
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] != ' ') {
      flush();
      if (absl::StartsWith(line, "Usage:")) {
        out += ".SH SYNOPSIS\n.B aobj\n[\\fIflags\\fR] \\fICOMMAND\\fR \\fIARGS\\fR...\n";
        section = "synopsis";
      } else if (absl::StartsWith(line, "Commands")) {
        std::string note = line.substr(line.find('(') + 1, line.rfind(')') - line.find('(') - 1);
        note[0] = absl::ascii_toupper(static_cast<unsigned char>(note[0]));
        out += ".SH COMMANDS\n" + RoffEscape(note) + ".\n";
        section = "commands";
      } else if (absl::StartsWith(line, "Flags:")) {
        out += ".SH OPTIONS\n";
        section = "flags";
      } else if (absl::StartsWith(line, "Exit status:")) {
        out += ".SH EXIT STATUS\n";
        pending = line.substr(std::strlen("Exit status: "));
        section = "exit";
      } else {
        pending += (pending.empty() ? "" : " ") + line;
      }
      continue;
    }
    const size_t text = line.find_first_not_of(' ');
    if (text >= 4 || section == "exit") {  // a continuation line
      pending += (pending.empty() ? "" : " ") + line.substr(text);
      continue;
    }
    flush();
    std::string rest = line.substr(2);
    if (rest[0] == '(') {  // a note between entries
      out += ".PP\n";
      pending = rest;
      continue;
    }
    const size_t gap = rest.find("  ");
    const std::string term = rest.substr(0, gap);
    out += ".TP\n.B " + RoffEscape(term) + "\n";
    if (gap != std::string::npos) pending = rest.substr(rest.find_first_not_of(' ', gap));
  }
  flush();
  out +=
      ".SH ENVIRONMENT\n"
      ".B AOBJ_ENDPOINT\\fR, \\fBAOBJ_ACCESS_KEY_ID\\fR, \\fBAOBJ_SECRET_ACCESS_KEY\\fR, "
      "\\fBAOBJ_CREDENTIALS_FILE\\fR, \\fBAOBJ_PROFILE\\fR, \\fBAOBJ_TLS_CA\\fR, "
      "\\fBAOBJ_MAX_ATTEMPTS\\fR, \\fBUCX_NET_DEVICES\n"
      "as the options above say; the order in which credentials are found is in "
      "docs/configuration.md.\n"
      ".SH FILES\n"
      ".TP\n.I ~/.aobj/credentials\n"
      "access keys by profile, in the INI form of ~/.aws/credentials (whose key names it "
      "accepts); readable by its owner only\n"
      ".TP\n.I ~/.aobj/config\n"
      "the endpoint of each profile ([profile NAME] sections, as ~/.aws/config)\n"
      ".SH SEE ALSO\n"
      "aobj\\-server \\-\\-help; docs/getting\\-started/cli.md (aobj beside aws s3); "
      "spec/aobj\\-1.md (the protocol).\n";
  std::cout << out;
  return 0;
}

// A capability by its name (spec 4.2); an unassigned one by its number.
std::string CapabilityName(uint32_t cap) {
  static const char* const kNames[] = {
      "",       "INLINE",    "CRC32C",    "CRC64NVME", "MULTI_DESCRIPTOR", "OPAQUE_ETAG",
      "CANCEL", "FAST_PATH", "BATCH_GET", "BATCH_PUT", "OPAQUE_PART_ETAG"};
  return cap > 0 && cap < std::size(kNames) ? kNames[cap] : std::to_string(cap);
}

std::string CheckOneEndpoint(const std::string& endpoint);

// --endpoint and AOBJ_ENDPOINT take HOST:PORT, or several separated by commas (gateways of one
// store); say what is wrong with anything else.
std::string CheckEndpoint(const std::string& endpoints) {
  for (absl::string_view e : absl::StrSplit(endpoints, ',')) {
    if (std::string bad = CheckOneEndpoint(std::string(e)); !bad.empty()) return bad;
  }
  return "";
}

std::string CheckOneEndpoint(const std::string& endpoint) {
  const size_t scheme = endpoint.find("://");
  if (scheme != std::string::npos) {
    std::string rest = endpoint.substr(scheme + 3);
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    return absl::StrCat("--endpoint takes HOST:PORT, not a URL: '", endpoint, "'; use --endpoint ",
                        rest.empty() ? "HOST:PORT" : rest,
                        " (the control channel is gRPC; TLS comes from --tls-ca, not https://)");
  }
  const size_t colon = endpoint.rfind(':');
  if (endpoint.empty() || colon == std::string::npos || colon + 1 == endpoint.size() ||
      endpoint.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
    return absl::StrCat("--endpoint takes HOST:PORT (for example 127.0.0.1:7878), got '", endpoint,
                        "'");
  }
  return "";
}

int Fail(const std::string& what, const absl::Status& st);

// `aobj mpu ls BUCKET[/PREFIX]`: one line per upload in progress, every page (spec 9.15);
// `aobj mpu abort BUCKET/KEY UPLOAD_ID`. `key` is the prefix for ls.
int MultipartCommand(aobj::Client& c, const std::vector<std::string>& pos,
                     const std::string& bucket, const std::string& key, bool quiet) {
  if (pos[0] == "abort") {
    absl::Status st = c.AbortMultipartUpload(bucket, key, pos[2]);
    if (!st.ok()) return Fail(absl::StrCat("mpu abort ", bucket, "/", key), st);
    if (!quiet) std::cout << "aborted upload " << pos[2] << " of " << bucket << "/" << key << "\n";
    return 0;
  }
  aobj::ListUploadsOptions options;
  options.prefix = key;
  size_t count = 0;
  for (;;) {
    auto page = c.ListMultipartUploads(bucket, options);
    if (!page.ok()) return Fail(absl::StrCat("mpu ls ", bucket), page.status());
    for (const aobj::UploadInfo& u : page->uploads) {
      std::cout << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(u.initiated_ms),
                                    absl::UTCTimeZone())
                << "  " << aobj::tools::Printable(u.upload_id) << "  "
                << aobj::tools::Printable(u.key) << "\n";
      ++count;
    }
    if (!page->truncated) break;
    options.key_marker = page->next_key_marker;
    options.upload_id_marker = page->next_upload_id_marker;
  }
  if (!quiet) std::cerr << count << " upload(s) in progress in " << bucket << "\n";
  return 0;
}

int Fail(const std::string& what, const absl::Status& st) {
  std::cerr << "aobj: " << aobj::tools::Printable(what) << ": " << aobj::tools::DescribeError(st)
            << "\n";
  return 1;
}

bool SplitPath(const std::string& s, std::string* bucket, std::string* key) {
  auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size()) return false;
  *bucket = s.substr(0, slash);
  *key = s.substr(slash + 1);
  return true;
}

std::string Checksum(const aobj::ObjectInfo& info) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", info.crc32c);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  // `aobj help [COMMAND]`, `aobj [flags] COMMAND --help`, `aobj --version`: before anything
  // else, so that they work without credentials or a server.
  std::string first_command;
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") help = true;
    if (a == "--version") {
      std::cout << kVersion << "\n";
      return 0;
    }
    if (first_command.empty() && !a.empty() && a[0] != '-') {
      // A flag's value is not a command: every flag but the bare ones takes one.
      const std::string prev = i > 1 ? argv[i - 1] : "";
      const bool bare = prev == "--help" ||
                        std::any_of(std::begin(kBareFlags), std::end(kBareFlags),
                                    [&](const char* f) { return prev == std::string("--") + f; });
      const bool value = prev.rfind("--", 0) == 0 && prev.find('=') == std::string::npos && !bare;
      if (!value) first_command = a;
    }
  }
  if (first_command == "completion") {
    std::string shell;
    for (int i = 1; i + 1 < argc; ++i) {
      if (std::string(argv[i]) == "completion") shell = argv[i + 1];
    }
    return Completion(shell);
  }
  if (first_command == "man") return ManPage();
  if (first_command == "help") {
    std::string topic;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "help" && i + 1 < argc) topic = argv[i + 1];
    }
    if (topic.empty()) {
      std::cout << kUsage;
      return 0;
    }
    const std::string text = CommandHelp(topic);
    if (text.empty()) return Usage("no help for '" + topic + "': not a command");
    std::cout << text;
    return 0;
  }
  if (help) {
    const std::string text = first_command.empty() ? "" : CommandHelp(first_command);
    std::cout << (text.empty() ? std::string(kUsage) : text);
    return 0;
  }
  aobj::tools::ParsedArgs args;
  absl::Status st = aobj::tools::ParseArgs(
      argc, argv, 1,
      {"endpoint",
       "credentials",
       "profile",
       "checksum",
       "content-type",
       "net-devices",
       "tls-ca",
       "tls-cert",
       "tls-key",
       "tls-server-name",
       "metadata",
       "metadata-directive",
       "range",
       "if-match",
       "if-none-match",
       "chunk-size",
       "multipart-threshold",
       "part-size",
       "timeout",
       "jobs",
       "etag",
       "exclude",
       "include",
       "max-attempts"},
      std::vector<std::string>(std::begin(kBareFlags), std::end(kBareFlags)), &args);
  if (!st.ok()) return Usage(std::string(st.message()));
  if (args.positional.empty()) return Usage("no command given");
  const std::string cmd = args.positional[0];
  const std::vector<std::string> pos(args.positional.begin() + 1, args.positional.end());
  const bool quiet = args.Has("quiet");

  aobj::ClientOptions options;
  const char* env_endpoint = std::getenv("AOBJ_ENDPOINT");
  options.endpoint = args.Get("endpoint", env_endpoint ? env_endpoint : "127.0.0.1:7878");
  if (std::string bad = CheckEndpoint(options.endpoint); !bad.empty()) return Usage(bad);
  options.client_name = "aobj-cli/" AOBJ_VERSION_STRING;
  const char* env_ca = std::getenv("AOBJ_TLS_CA");
  options.tls.ca_file = args.Get("tls-ca", env_ca ? env_ca : "");
  options.tls.cert_file = args.Get("tls-cert");
  options.tls.key_file = args.Get("tls-key");
  options.tls.server_name_override = args.Get("tls-server-name");
  options.tls.enabled = !options.tls.ca_file.empty() || !options.tls.cert_file.empty();
  options.allow_inline = !args.Has("no-inline");
  if (const std::string etag = args.Get("etag", "md5"); etag == "opaque") {
    options.opaque_etags = true;
  } else if (etag != "md5") {
    return Usage("--etag must be md5 or opaque");
  }
  options.require_hardware_protection = args.Has("require-hardware-protection");
  options.data_channel.net_devices = args.Get("net-devices", "lo");
  if (args.Has("timeout")) {
    double seconds = 0;
    if (!absl::SimpleAtod(args.Get("timeout"), &seconds) || !(seconds > 0) || seconds > 86400) {
      return Usage("--timeout takes a number of seconds above 0 (at most 86400)");
    }
    options.timeout_ms = std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000));
  }
  const std::string checksum = args.Get("checksum", "crc32c");
  if (checksum == "crc32c") {
    options.checksum = aobj::ChecksumAlgorithm::kCrc32c;
  } else if (checksum == "crc64nvme") {
    options.checksum = aobj::ChecksumAlgorithm::kCrc64Nvme;
  } else {
    return Usage("--checksum must be crc32c or crc64nvme");
  }
  // Flags, then the environment, AOBJ_CREDENTIALS_FILE, then the profile of ~/.aobj/credentials;
  // the profile's endpoint in ~/.aobj/config unless --endpoint or AOBJ_ENDPOINT
  // (docs/configuration.md).
  aobj::ClientEnvironment env = aobj::ClientEnvironment::FromProcess();
  if (args.Has("profile")) {
    env.profile = args.Get("profile");
    env.profile_source = "--profile";
  }
  if (args.Has("credentials")) {
    env.access_key_id.clear();
    env.secret.clear();
    env.credentials_file = args.Get("credentials");
  }
  absl::StatusOr<aobj::ClientProfile> profile = aobj::ResolveClientProfile(env);
  if (!profile.ok()) return Usage(std::string(profile.status().message()));
  for (const std::string& w : profile->warnings) std::cerr << "aobj: warning: " << w << "\n";
  if (!args.Has("endpoint") && env_endpoint == nullptr && !profile->endpoint.empty()) {
    options.endpoint = profile->endpoint;
    if (std::string bad = CheckEndpoint(options.endpoint); !bad.empty()) {
      return Usage(absl::StrCat("profile [", profile->name, "] in ", env.config_file, ": ", bad));
    }
  }
  const aobj::Credential* cred = &profile->credential;
  options.access_key_id = cred->access_key_id;
  options.secret = cred->secret;

  // Settings of the S3-style commands (cli_s3.h), checked before a session opens.
  aobj::cli::CliSettings settings;
  settings.quiet = quiet;
  settings.progress = !quiet && !args.Has("no-progress") && isatty(2);
  settings.recursive = args.Has("recursive");
  settings.force = args.Has("force");
  settings.summarize = args.Has("summarize");
  settings.json = args.Has("json");
  settings.dryrun = args.Has("dryrun");
  settings.fsync = args.Has("fsync");
  settings.batch = !args.Has("no-batch");
  settings.delete_extra = args.Has("delete");
  settings.sync.size_only = args.Has("size-only");
  settings.sync.exact_timestamps = args.Has("exact-timestamps");
  settings.sync.compare_etag = args.Has("compare-etag");
  for (const auto& [name, value] : args.sequence) {
    if (name != "exclude" && name != "include") continue;
    if (value.empty()) return Usage("--" + name + " takes a pattern");
    if (name == "exclude") {
      settings.filters.Exclude(value);
    } else {
      settings.filters.Include(value);
    }
  }
  settings.put.content_type = args.Get("content-type", "");
  if (args.flags.count("metadata")) {
    for (const std::string& pair : args.flags.at("metadata")) {
      const size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) return Usage("--metadata takes NAME=VALUE");
      settings.put.user_metadata[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
  }
  const std::string directive = args.Get("metadata-directive", "COPY");
  if (directive != "COPY" && directive != "REPLACE") {
    return Usage("--metadata-directive must be COPY or REPLACE");
  }
  settings.replace_metadata = directive == "REPLACE";
  if (args.Has("range")) {
    auto range = aobj::ByteRange::Parse(args.Get("range"));
    if (!range.ok()) return Usage(absl::StrCat("--range: ", range.status().message()));
    settings.range = *range;
  }
  settings.put.conditions.if_match = args.Get("if-match");
  settings.get_conditions.if_match = args.Get("if-match");
  settings.get_conditions.if_none_match = args.Get("if-none-match");
  settings.put.conditions.if_none_match = args.Get("if-none-match");
  if (int64_t chunk = 0; !args.GetInt("chunk-size", 64 << 20, &chunk).ok() || chunk <= 0) {
    return Usage("--chunk-size takes a positive number of bytes");
  } else {
    settings.chunk_size = static_cast<uint64_t>(chunk);
  }
  if (int64_t v = 0; !args.GetInt("multipart-threshold", 64 << 20, &v).ok() || v < 0) {
    return Usage("--multipart-threshold takes a number of bytes (0: never multipart)");
  } else {
    settings.multipart_threshold = static_cast<uint64_t>(v);
  }
  if (int64_t v = 0; !args.GetInt("part-size", 16 << 20, &v).ok() || v <= 0) {
    return Usage("--part-size takes a positive number of bytes");
  } else {
    settings.part_size = static_cast<uint64_t>(v);
  }
  {
    const char* env_attempts = std::getenv("AOBJ_MAX_ATTEMPTS");
    int64_t v = 0;
    const std::string from = args.Has("max-attempts") ? "--max-attempts" : "AOBJ_MAX_ATTEMPTS";
    const bool given = args.Has("max-attempts") || (env_attempts != nullptr && *env_attempts);
    const std::string text = args.Has("max-attempts")  ? args.Get("max-attempts")
                             : env_attempts != nullptr ? env_attempts
                                                       : "";
    if (given && (!absl::SimpleAtoi(text, &v) || v < 1 || v > 100)) {
      return Usage(from + " takes a number of attempts from 1 to 100, not '" + text + "'");
    }
    if (given) settings.retry.max_attempts = static_cast<int>(v);
  }
  if (int64_t v = 0; !args.GetInt("jobs", 0, &v).ok() || v < 0 || v > 256) {
    return Usage("--jobs takes a number of files from 1 to 256");
  } else {
    settings.jobs = static_cast<int>(v);
  }
  using CommandFn = int (*)(aobj::Client&, const std::vector<std::string>&,
                            const aobj::cli::CliSettings&);
  CommandFn s3_command = cmd == "cp"     ? aobj::cli::RunCp
                         : cmd == "mv"   ? aobj::cli::RunMv
                         : cmd == "sync" ? aobj::cli::RunSync
                         : cmd == "ls"   ? aobj::cli::RunLs
                         : cmd == "rm"   ? aobj::cli::RunRm
                         : cmd == "mb"   ? aobj::cli::RunMb
                         : cmd == "rb"   ? aobj::cli::RunRb
                         : cmd == "stat" ? aobj::cli::RunStat
                         : cmd == "head" ? aobj::cli::RunStat  // one printer: head is stat
                                         : nullptr;

  std::string bucket, key;
  auto need = [&](size_t n, const char* form) -> bool {
    if (pos.size() != n) {
      Usage(absl::StrCat("usage: aobj ", form));
      return false;
    }
    return true;
  };

  // Validate the command's arguments before opening a session.
  if (cmd == "put") {
    if (!need(2, "put FILE BUCKET/KEY")) return 2;
    if (!SplitPath(pos[1], &bucket, &key)) return Usage("expected BUCKET/KEY, got " + pos[1]);
  } else if (cmd == "get") {
    if (!need(2, "get BUCKET/KEY FILE")) return 2;
    if (!SplitPath(pos[0], &bucket, &key)) return Usage("expected BUCKET/KEY, got " + pos[0]);
  } else if (s3_command != nullptr) {
    // cli_s3.cc checks its own arguments.
  } else if (cmd == "session") {
    if (!need(0, "session")) return 2;
  } else if (cmd == "mpu") {
    const std::string form = "mpu ls BUCKET[/PREFIX] | mpu abort BUCKET/KEY UPLOAD_ID";
    if (pos.empty() || (pos[0] != "ls" && pos[0] != "abort")) return Usage("usage: aobj " + form);
    if (!need(pos[0] == "ls" ? 2 : 3, form.c_str())) return 2;
    if (pos[0] == "ls") {
      bucket = pos[1].substr(0, pos[1].find('/'));
      if (bucket.size() < pos[1].size()) key = pos[1].substr(bucket.size() + 1);  // the prefix
    } else if (!SplitPath(pos[1], &bucket, &key)) {
      return Usage("expected BUCKET/KEY, got " + pos[1]);
    }
  } else {
    return Usage("unknown command '" + cmd + "'");
  }

  // Several gateways: the first that answers opens the command's first session.
  const std::vector<std::string> configured = absl::StrSplit(options.endpoint, ',');
  absl::StatusOr<std::unique_ptr<aobj::Client>> client = absl::UnknownError("no endpoint");
  for (size_t i = 0; i < configured.size(); ++i) {
    options.endpoint = configured[i];
    client = aobj::Client::Connect(options);
    if (client.ok() || i + 1 == configured.size()) break;
    std::cerr << "aobj: gateway " << configured[i]
              << " cannot be reached: " << client.status().message().substr(0, 200) << "; trying "
              << configured[i + 1] << "\n";
  }
  if (!client.ok()) {
    if (std::string why = aobj::ControlChannelFailure(client.status()); !why.empty()) {
      std::cerr << "aobj: cannot reach " << options.endpoint << ": " << why
                << (why == "connection refused" || why == "no answer within the deadline"
                        ? "; is aobj-server running there? (--endpoint HOST:PORT or "
                          "AOBJ_ENDPOINT names the server)"
                    : why == "TLS handshake failed"
                        ? "; does the server use TLS, and does --tls-ca name its CA?"
                        : "")
                << "\n";
      return 1;
    }
    return Fail(absl::StrCat("cannot open a session with ", options.endpoint), client.status());
  }
  // cp, mv and sync replace a lost session (a server restart) as their retries need, and spread
  // over the gateways: those configured, then those the server lists (spec 5.11).
  std::vector<std::string> gateway_list = {options.endpoint};
  for (const std::string& g : configured) gateway_list.push_back(g);
  gateway_list = aobj::cli::GatewayList(gateway_list, (*client)->session().gateways, 64);
  aobj::cli::Sessions sessions(
      options, std::move(*client), gateway_list,
      [](const std::string& line) { std::cerr << "aobj: " << line << "\n"; });
  settings.sessions = &sessions;
  aobj::Client& c = sessions.Current(nullptr);

  if (s3_command != nullptr) {
    const int rc = s3_command(c, pos, settings);
    const bool closed = sessions.Current(nullptr).Close().ok();
    return rc != 0 ? rc : (closed ? 0 : 1);
  }
  if (cmd == "mpu") return MultipartCommand(c, pos, bucket, key, quiet);
  if (cmd == "session") {
    const aobj::SessionInfo& s = c.session();
    if (settings.json) {
      std::vector<std::string> caps;
      for (uint32_t cap : s.capabilities) caps.push_back(CapabilityName(cap));
      std::cout << aobj::cli::JsonRecord()
                       .Text("server", s.server_name)
                       .Text("endpoint", options.endpoint)
                       .Number("version", s.version)
                       .Text("session_id", s.session_id)
                       .Number("lease_ms", static_cast<double>(s.lease_ms))
                       .Text("memory_protection", s.protection == aobj::MemoryProtection::kHardware
                                                      ? "hardware"
                                                      : "emulated")
                       .Texts("capabilities", caps)
                       .Text("request_path", s.fast_path_address.empty() ? "grpc" : "fast")
                       .Texts("gateways", s.gateways)
                       .Record("limits",
                               aobj::cli::JsonRecord()
                                   .Number("max_transfer_bytes",
                                           static_cast<double>(s.limits.max_transfer_bytes))
                                   .Number("max_in_flight", s.limits.max_in_flight)
                                   .Number("inline_threshold",
                                           static_cast<double>(s.limits.inline_threshold))
                                   .Number("max_descriptors", s.limits.max_descriptors)
                                   .Number("min_part_size",
                                           static_cast<double>(s.limits.min_part_size)))
                       .Line()
                << "\n";
      return c.Close().ok() ? 0 : 1;
    }
    std::cout << "server:            " << s.server_name << " at " << options.endpoint << "\n"
              << "protocol version:  " << s.version << "\n"
              << "session id:        " << s.session_id << "\n"
              << "lease:             " << s.lease_ms << " ms\n"
              << "memory protection: "
              << (s.protection == aobj::MemoryProtection::kHardware ? "hardware" : "emulated")
              << "\n"
              << "capabilities:     ";
    for (uint32_t cap : s.capabilities) {
      const std::string name = CapabilityName(cap);
      std::cout << " " << name << (name == std::to_string(cap) ? "" : absl::StrCat("(", cap, ")"));
    }
    std::cout << "\nlimits:            max_transfer_bytes=" << s.limits.max_transfer_bytes
              << " max_in_flight=" << s.limits.max_in_flight
              << " inline_threshold=" << s.limits.inline_threshold
              << " max_descriptors=" << s.limits.max_descriptors;
    if (s.limits.min_part_size != 0) std::cout << " min_part_size=" << s.limits.min_part_size;
    // AOBJ-OBJ-255, AOBJ-OBJ-256: bounds the server announced, when it did.
    if (s.limits.max_part_size != 0) std::cout << " max_part_size=" << s.limits.max_part_size;
    if (s.limits.max_object_size != 0) {
      std::cout << " max_object_size=" << s.limits.max_object_size;
    }
    if (s.limits.max_key_bytes != 0) std::cout << " max_key_bytes=" << s.limits.max_key_bytes;
    if (s.limits.max_list_page != 0) std::cout << " max_list_page=" << s.limits.max_list_page;
    // AOBJ-OBJ-263: what a success promises.
    std::cout << "\ncommits:           "
              << (s.limits.durable_commits ? "durable (survive power loss on the server's host)"
                                           : "visible (the server promises nothing across a "
                                             "power loss)");
    std::cout << "\n";
    // Spec 8.9: whether requests travel as active messages on the data channel.
    std::cout << "request path:      "
              << (s.fast_path_address.empty() ? "gRPC"
                                              : "fast path (UCX active messages on the data "
                                                "channel; sessions and listings by gRPC)")
              << "\n";
    if (!s.gateways.empty()) {
      std::cout << "other gateways:    " << absl::StrJoin(s.gateways, " ") << "\n";
    }
    return c.Close().ok() ? 0 : 1;
  }
  if (cmd == "put") {
    int fd = open(pos[0].c_str(), O_RDONLY | O_CLOEXEC);
    struct stat sb {};
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      if (fd >= 0) close(fd);
      return Usage(absl::StrCat("cannot read regular file ", pos[0], ": ", std::strerror(errno)));
    }
    const uint64_t size = static_cast<uint64_t>(sb.st_size);
    auto buf = c.AllocateBuffer(std::max<uint64_t>(size, 1));
    if (!buf.ok()) return Fail("allocate buffer", buf.status());
    for (uint64_t off = 0; off < size;) {
      ssize_t r = pread(fd, (*buf)->data() + off, size - off, static_cast<off_t>(off));
      if (r <= 0) {
        close(fd);
        return Usage(absl::StrCat("read ", pos[0], ": ", r < 0 ? std::strerror(errno) : "short"));
      }
      off += static_cast<uint64_t>(r);
    }
    close(fd);
    const aobj::PutOptions& po = settings.put;
    const absl::Time t0 = absl::Now();
    auto r = c.Put(bucket, key, **buf, size, po);
    const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
    if (!r.ok()) return Fail(absl::StrCat("put ", bucket, "/", key), r.status());
    if (!quiet) {
      std::cout << "put " << aobj::tools::Printable(pos[0]) << " -> "
                << aobj::tools::Printable(absl::StrCat(bucket, "/", key)) << ": " << size
                << " bytes (" << aobj::tools::HumanBytes(size) << ") in "
                << absl::StrFormat("%.3f", secs) << " s, " << aobj::tools::HumanRate(size, secs)
                << ", path=" << aobj::TransferPathName(r->path)
                << ", etag=" << aobj::tools::Printable(r->info.etag)
                << ", crc32c=" << Checksum(r->info) << " (verified by both sides)\n";
    }
    buf->reset();
    return c.Close().ok() ? 0 : 1;
  }
  // get
  auto info = c.Head(bucket, key);
  if (!info.ok()) return Fail(absl::StrCat("get ", bucket, "/", key), info.status());
  auto buf = c.AllocateBuffer(std::max<uint64_t>(info->size, 1));
  if (!buf.ok()) return Fail("allocate buffer", buf.status());
  const absl::Time t0 = absl::Now();
  auto r = c.Get(bucket, key, **buf);
  const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
  if (!r.ok()) return Fail(absl::StrCat("get ", bucket, "/", key), r.status());
  const uint64_t size = r->bytes_transferred;
  const bool to_stdout = pos[1] == "-";
  const std::string tmp = pos[1] + ".aobj-partial";
  int fd = to_stdout ? 1 : open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Usage(absl::StrCat("cannot write ", pos[1], ": ", std::strerror(errno)));
  for (uint64_t off = 0; off < size;) {
    ssize_t w = write(fd, (*buf)->data() + off, size - off);
    if (w <= 0) {
      if (!to_stdout) unlink(tmp.c_str());
      return Usage(absl::StrCat("write ", pos[1], ": ", std::strerror(errno)));
    }
    off += static_cast<uint64_t>(w);
  }
  if (!to_stdout) {
    // The file appears whole or not at all.
    if (fsync(fd) != 0 || close(fd) != 0 || std::rename(tmp.c_str(), pos[1].c_str()) != 0) {
      unlink(tmp.c_str());
      return Usage(absl::StrCat("write ", pos[1], ": ", std::strerror(errno)));
    }
  }
  if (!quiet) {
    (to_stdout ? std::cerr : std::cout)
        << "get " << aobj::tools::Printable(absl::StrCat(bucket, "/", key)) << " -> "
        << aobj::tools::Printable(pos[1]) << ": " << size << " bytes ("
        << aobj::tools::HumanBytes(size) << ") in " << absl::StrFormat("%.3f", secs) << " s, "
        << aobj::tools::HumanRate(size, secs) << ", path=" << aobj::TransferPathName(r->path)
        << ", etag=" << aobj::tools::Printable(r->info.etag) << ", crc32c=" << Checksum(r->info)
        << " (verified by both sides)\n";
  }
  buf->reset();
  return c.Close().ok() ? 0 : 1;
}
