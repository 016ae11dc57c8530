// The memory-protection classification of a UCX endpoint's lanes (transport/lane_protection.h,
// spec AOBJ-TRN-015, spec review D10): an allow-list that fails closed. The samples have the
// form of UCX 1.13.1's ucp_ep_print_info; this host has no RNIC, so the HARDWARE samples are
// written by hand in that form, and the endpoints the other tests make here are all EMULATED.
#include "transport/lane_protection.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

using ::testing::ElementsAre;

std::string Endpoint(const std::string& lanes) {
  return "#\n# UCP endpoint\n#\n#               peer: <no debug data>\n" + lanes + "#\n";
}

TEST(LaneProtectionTest, TransportNamesOfEveryLane) {
  const std::string info = Endpoint(
      "#                 lane[0]:  4:rc_mlx5/mlx5_0:1.0 md[2]          -> md[2]/ib/sysdev[255] "
      "rma_bw#0 am am_bw#0 wireup\n"
      "#                 lane[1]:  9:ud_mlx5/mlx5_0:1.0 md[2]          -> md[2]/ib wireup{aux}\n"
      "#                 lane[2]: garbled\n");
  EXPECT_THAT(LaneTransports(info), ElementsAre("rc_mlx5", "ud_mlx5", ""));
}

TEST(LaneProtectionTest, VerbsLanesOnlyAreHardware) {
  EXPECT_TRUE(LanesEnforceRemoteKeys(
      Endpoint("#   lane[0]:  4:rc_mlx5/mlx5_0:1.0 md[2] -> md[2]/ib rma_bw#0 am\n"
               "#   lane[1]:  7:dc_mlx5/mlx5_1:1.0 md[3] -> md[3]/ib rma_bw#1\n"
               "#   lane[2]:  9:ud_verbs/mlx5_0:1.0 md[2] -> md[2]/ib wireup{aux}\n")));
  EXPECT_TRUE(LanesEnforceRemoteKeys(
      Endpoint("#   lane[0]:  1:rc_verbs/mlx4_0:1 md[0] -> md[0]/ib rma_bw#0 am\n")));
}

// AOBJ-SEC-002: software transports, transports the list does not know, emulated RMA, a lane
// that does not parse and no lane at all are EMULATED.
TEST(LaneProtectionTest, EverythingElseFailsClosed) {
  for (const char* lane :
       {"#   lane[0]:  2:tcp/lo md[1] -> md[1]/tcp rma_bw#0 am\n",
        "#   lane[0]:  0:sysv/memory md[0] -> md[0]/sysv rma_bw#0\n",
        "#   lane[0]:  0:posix/memory md[0] rma_bw#0\n", "#   lane[0]:  3:cma/memory md[4] rma\n",
        "#   lane[0]:  5:self/memory0 md[5] am\n", "#   lane[0]:  6:xpmem/memory md[6] rma\n",
        "#   lane[0]:  6:knem/memory md[6] rma\n", "#   lane[0]:  8:cuda_ipc/cuda md[7] rma_bw#0\n",
        "#   lane[0]:  8:rocm_ipc/rocm md[7] rma_bw#0\n",
        "#   lane[0]:  8:gga_mlx5/mlx5_0:1.0 md[2] rma_bw#0\n",
        "#   lane[0]:  4:rc_mlx5/mlx5_0:1.0 md[2] am\n#   rma_am emulated over lane 0\n",
        "#   lane[0]: garbled\n", ""}) {
    EXPECT_FALSE(LanesEnforceRemoteKeys(Endpoint(lane))) << lane;
  }
  // One software lane beside verbs lanes is enough.
  EXPECT_FALSE(
      LanesEnforceRemoteKeys(Endpoint("#   lane[0]:  4:rc_mlx5/mlx5_0:1.0 md[2] rma_bw#0\n"
                                      "#   lane[1]:  2:tcp/eth0 md[1] rma_bw#1\n")));
}

}  // namespace
}  // namespace aobj
