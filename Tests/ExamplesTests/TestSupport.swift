// Latches, recorders, process census and thread helpers, shared by the test targets.
@_exported import LongThreadsTestSupport
