extension Array {
    /// Consecutive slices of at most `size` elements: rows for statements that take their
    /// rows as arrays, a bounded number at a time.
    func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
