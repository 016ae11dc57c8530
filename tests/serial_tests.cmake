# Included by ctest after the discovered tests (tests/CMakeLists.txt): tests that compare what the
# server does under a flood with what it does alone, in one run, run with nothing beside them.
# Beside another test on the 2 cores the two halves of the comparison meet different loads (one
# such ratio fell from 0.64-0.78 alone to 0.09 next to a flood test here). A tree without these
# tests (the fuzz build's) ignores the line.
set_tests_properties([=[TlsTest.AHandshakeFloodLeavesEstablishedConnectionsServed]=]
                     [=[TlsTest.AHandshakeBacklogOfOtherAddressesDoesNotHoldUpAnothersHandshake]=]
                     PROPERTIES RUN_SERIAL TRUE)
# Tests that count the clients served beside a churn of connections (testing::ServedBesideAChurn):
# a client that has not signed a request within a second of connecting may be cut for room, and
# two churns at once on the 2 cores (CI ran two of these side by side) starved the server and its
# clients past that second: 6 of 8 served (here, two at once on one core: 5-7 of 8; each alone on
# that core: 8 of 8, ten runs of each).
set_tests_properties([=[ConnectionFloodTest.AChurnFromOtherAddressesDoesNotKeepAClientOut]=]
                     [=[ConnectionFloodTest.IdleConnectionsFromManyAddressesLeaveTheReserveToClients]=]
                     [=[RequestFloodTest.AChurnOfYoungConnectionsDoesNotKeepNewClientsOut]=]
                     [=[RequestFloodTest.AChurnAtTheBoundOnUnauthenticatedConnectionsDoesNotKeepNewClientsOut]=]
                     [=[RequestFloodTest.ANewcomerOfAnAddressBusyWithSignedClientsIsNotCutForAChurn]=]
                     PROPERTIES RUN_SERIAL TRUE)
# A healthy client's throughput beside two hostile peers against its throughput alone
# (BesidePeersTest): CI ran two of them side by side, each measuring while the other's peers
# loaded the 2 cores, and one ratio came out 0.16-0.46 (alone here: 0.97-1.01, three runs).
foreach(c StalledHeapPuts StalledTcpGets CrashingPuts ExitingGets OutsideWindowGets StalledTcpPuts
          StalledPosixGets)
  set_tests_properties(
    "Behaviours/BesidePeersTest.HealthyClientKeepsHalfItsThroughput/${c}  # GetParam() = ${c}"
    PROPERTIES RUN_SERIAL TRUE)
endforeach()
