/// What `locgate --version` prints: `locgate VERSION (commit COMMIT)`.
///
/// The version is this constant, raised with each release (Deploy/package names the Debian
/// package after it). The commit is the one the binary was built from when the build recorded it:
/// `Deploy/package` writes `PackagedCommit.swift` (ignored by git) beside this file and builds with
/// `-DLOCGATE_PACKAGED_COMMIT`; any other build says `unknown`. Nothing asks git at run time.
enum LocgateVersion {
    static let number = "1.0.0"

    static var commit: String {
        #if LOCGATE_PACKAGED_COMMIT
        return packagedCommit.isEmpty ? "unknown" : packagedCommit
        #else
        return "unknown"
        #endif
    }

    static var text: String { "locgate \(number) (commit \(commit))" }
}
