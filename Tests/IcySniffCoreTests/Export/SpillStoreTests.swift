import Testing
@testable import IcySniffCore

/// The HAR writer spills serialised entries and reads them back in another order; every record
/// must come back byte for byte, whether it stayed in memory, went to the file, or is larger than
/// the read-back window.
@Suite struct SpillStoreTests {
    @Test(arguments: [64, 4096, 1 << 20]) func recordsComeBackInAnyOrder(memoryLimit: Int) {
        var rng = SplitMix(state: UInt64(memoryLimit))
        let store = SpillStore(memoryLimit: memoryLimit)
        var records: [(offset: Int, bytes: [UInt8])] = []
        for k in 0..<600 {
            // Mostly small records, a few past the memory limit, one past the 1 MiB window.
            let length = k == 300 ? (3 << 19) : (k % 97 == 0 ? memoryLimit + 17 : Int(rng.next() % 3000))
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            records.append((bytes.withUnsafeBufferPointer { store.append($0) }, bytes))
        }
        // Sequential (the common case: nearly sorted), then shuffled, then backwards.
        var order = Array(records.indices)
        for pass in 0..<3 {
            if pass == 1 { order.shuffle(using: &rng) }
            if pass == 2 { order.reverse() }
            for i in order {
                let r = records[i]
                let back = store.withBytes(offset: r.offset, length: r.bytes.count) { Array($0) }
                #expect(back == r.bytes, "record \(i) (\(r.bytes.count) bytes), pass \(pass)")
            }
        }
    }
}
