// RadosStore: an ObjectStore on a Ceph RADOS pool, so that many aobj-server gateways serve one
// set of buckets (issue 20; docs/deploy-cluster.md). Link aobj_store_rados (and librados).
//
// Every promise of store.h holds across processes that open the same pool and namespace: a
// commit is atomic (a reader through any gateway sees the old or the new object, never a mix),
// commit conditions are decided by a compare-and-swap in RADOS, not by a read on one gateway
// followed by a write, listings come from one sorted RADOS omap, and a bucket deleted through
// one gateway is gone for the writers of every other.
//
// Bytes live in stripes (one RADOS object each) written under a fresh name for every PUT and
// never rewritten; the version a key names is one small record. Data that no key names any more
// (replaced or deleted versions, writes that failed or whose gateway died) is deleted by a
// collector after `gc_grace_ms`, which is also how long an ObjectReader keeps reading a version
// after it was replaced or deleted. Every store runs the collector every `gc_interval_ms`;
// running it in several gateways at once is safe.
//
// Threading: as ObjectStore. Ownership: the store owns its cluster connection.
#ifndef AOBJ_RADOS_STORE_H_
#define AOBJ_RADOS_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/store.h"

namespace aobj {

struct RadosStoreOptions {
  // ceph.conf of the cluster; empty: librados's defaults (CEPH_CONF, /etc/ceph/ceph.conf).
  std::string conf_file;
  // Ceph user, as in `ceph --id`: "admin" connects as client.admin.
  std::string user = "admin";
  std::string pool = "aobj";
  // RADOS namespace within the pool; stores in different namespaces share nothing.
  std::string ns;
  // Bytes per stripe (one RADOS object). 64 KiB to 64 MiB.
  uint32_t stripe_bytes = 4 * 1024 * 1024;
  // Stripes a writer or reader keeps in flight at once (1 to 64).
  uint32_t stripes_in_flight = 4;
  // How long data no key names is kept before the collector deletes it, and so how long a PUT
  // may run and a reader may read a replaced version. At least 0 (tests only).
  int64_t gc_grace_ms = 15 * 60 * 1000;
  // How often this store runs the collector; 0: never by itself (call CollectGarbage()).
  int64_t gc_interval_ms = 60 * 1000;
  // Cluster connection timeout.
  int64_t connect_timeout_ms = 10 * 1000;
};

// What one collection did.
struct RadosGcReport {
  uint64_t entries_examined = 0;  // entries old enough to decide on
  uint64_t versions_deleted = 0;  // data no key named, deleted
  uint64_t versions_kept = 0;     // entries whose data a key still names: the entry went
  // Entries found younger than the grace (a shard's scan stops at its first young entry, so
  // this is at most one per shard plus those renewed since they were written).
  uint64_t entries_waiting = 0;
};

class RadosStore : public ObjectStore {
 public:
  // Deletes the data of every garbage entry older than the grace whose version no key names.
  virtual absl::StatusOr<RadosGcReport> CollectGarbage() = 0;
  // A 32-octet random secret named `name`, the same for every store on the pool and namespace:
  // made by the first to ask, read by the others. aobj-server takes the key of its listing
  // continuation tokens from here, so that a token one gateway issued works on every other.
  virtual absl::StatusOr<std::string> SharedSecret(const std::string& name) = 0;
  // Gateways of the store (spec 5.11): each registers the address its clients reach it at, again
  // at least every max_age_ms / 3 while it serves, and deregisters when it stops; Gateways()
  // lists those registered within the last `max_age_ms`, in address order.
  virtual absl::Status RegisterGateway(const std::string& address) = 0;
  virtual absl::Status DeregisterGateway(const std::string& address) = 0;
  virtual absl::StatusOr<std::vector<std::string>> Gateways(int64_t max_age_ms) = 0;
  // RADOS objects of the store's namespace whose names start with `prefix` (tests, tools).
  virtual absl::StatusOr<uint64_t> CountObjects(const std::string& prefix) = 0;
};

// Connects to the cluster and opens (creating what is missing of) the store in the pool and
// namespace. The pool must exist (`ceph osd pool create`); kStorageError names what failed.
absl::StatusOr<std::unique_ptr<RadosStore>> OpenRadosStore(const RadosStoreOptions& options);

}  // namespace aobj

#endif  // AOBJ_RADOS_STORE_H_
