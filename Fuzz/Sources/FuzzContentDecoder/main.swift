import IcySniffCore

/// The content decoders (gzip, deflate, br, zstd, stacked) with arbitrary input and splits.
let codings: [[String]] = [["gzip"], ["deflate"], ["br"], ["zstd"], ["gzip", "br"], ["deflate", "gzip"], ["zstd", "deflate"]]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let choice = codings[Int(data[0] & 0x0f) % codings.count]
    let step = Int(data[0] >> 4) * 7 + 1
    guard let decoder = try? ContentDecoder(encodings: choice, maxOutput: 1 << 22) else { return 0 }
    var produced = 0
    var i = 1
    while i < size {
        let end = min(size, i + step)
        decoder.feed(UnsafeRawBufferPointer(start: data + i, count: end - i)) { produced += $0.count }
        i = end
    }
    precondition(produced <= 1 << 22, "the cap holds")
    return 0
}
