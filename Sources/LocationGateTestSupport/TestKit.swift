// The database harness brings the kit along: an integration test imports one module and has
// both, while the unit test targets depend on `LocationGateTestKit` alone, so the package
// graph keeps the harness (`TestDatabase`, `LocgateServer`) out of their reach.
@_exported import LocationGateTestKit
