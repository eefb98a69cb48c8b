// The libFuzzer entry point. Not part of the package: `Labs/fuzz` compiles it with the
// domain's sources and EventFuzzing into one binary with `swiftc -sanitize=fuzzer`.

@_cdecl("LLVMFuzzerTestOneInput")
public func locgateFuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    EventFuzzing.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
