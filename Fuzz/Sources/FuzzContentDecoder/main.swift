import IcySniffCore

/// The content decoders (gzip, deflate, br, zstd, stacked) with arbitrary input and splits.
let codings: [[String]] = [["gzip"], ["deflate"], ["br"], ["zstd"], ["gzip", "br"], ["deflate", "gzip"], ["zstd", "deflate"]]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let choice = codings[Int(data[0] & 0x0f) % codings.count]
    let step = Int(data[0] >> 4) * 7 + 1
    // The whole-body fast path (libdeflate) and the streaming path (zlib) must agree exactly.
    var results: [(Int, Bool, Bool)] = []
    for whole in [true, false] {
        guard let decoder = try? ContentDecoder(encodings: choice, maxOutput: 1 << 22, wholeBody: whole) else { return 0 }
        var produced = 0
        var i = 1
        while i < size {
            let end = min(size, i + step)
            decoder.feed(UnsafeRawBufferPointer(start: data + i, count: end - i)) { produced += $0.count }
            i = end
        }
        decoder.finish { produced += $0.count }
        precondition(produced <= 1 << 22, "the cap holds")
        results.append((produced, decoder.failed, decoder.capped))
    }
    precondition(results[0] == results[1], "fast and streaming paths agree: \(results)")
    // A decoder that only counts (no --bodies) gives the same count and outcome, the first time
    // (inflated) and the second (the memo of identical bodies, when the first one succeeded).
    for _ in 0..<2 {
        guard let decoder = try? ContentDecoder(encodings: choice, maxOutput: 1 << 22, keepsOutput: false) else { return 0 }
        var called = false
        var i = 1
        while i < size {
            let end = min(size, i + step)
            decoder.feed(UnsafeRawBufferPointer(start: data + i, count: end - i)) { _ in called = true }
            i = end
        }
        decoder.finish { _ in called = true }
        precondition(!called, "a counting decoder hands out no bytes")
        let counted = (Int(decoder.decodedCount), decoder.failed, decoder.capped)
        precondition(counted == results[0], "counting agrees: \(counted) vs \(results[0])")
    }
    return 0
}
