/// Byte ranges by offset, delivered in order: QUIC's CRYPTO data and each STREAM's data (RFC 9000
/// §2.2, §19.6: ranges may come out of order, repeat, overlap, and leave holes). TCP's sequence
/// numbers wrap and carry flags; these offsets do neither, so this is its own small type (as
/// quic-go's frame sorter serves both of its uses).
///
/// Input: `(offset, bytes, time)` ranges. Output: contiguous bytes from offset 0 on, each chunk
/// with the time at which it became contiguous; holes only when the caller declares them lost
/// (`skipHoles`: the end of the stream or of the connection, or the cap on what waits).
/// Memory: copies of the ranges beyond a hole only, at most `maxPending` bytes, each range charged
/// `rangeOverhead` bytes beyond its data (a flood of one-byte ranges is held to the cap too).
/// Time: O(log n) per range, whatever order ranges come in: they wait in a min-heap on (offset,
/// arrival), as TCP's `OutOfOrderStore` and quic-go's frame sorter keep them (a sorted array cost
/// O(n) per range: a body sent in 200,000 one-byte frames last byte first took 52 s).
struct OffsetReassembler {
    /// The next offset to deliver: everything before it was delivered or declared lost.
    private(set) var delivered: UInt64 = 0
    private var pending = OutOfOrderStore()
    /// The longest range waiting at each offset: a repeat that is no longer is dropped at once.
    private var longestAt: [UInt64: Int] = [:]
    /// What waits, in bytes: the ranges' data plus `rangeOverhead` each.
    private(set) var pendingBytes = 0
    /// Bytes declared lost (holes skipped).
    private(set) var lostBytes: UInt64 = 0
    let maxPending: Int
    /// What a waiting range costs beyond its bytes (its array, the heap's and the map's entries).
    static let rangeOverhead = 64

    init(maxPending: Int = 4 << 20) { self.maxPending = maxPending }

    var hasPending: Bool { !pending.isEmpty }

    /// One range. `deliver` gets the bytes that are now contiguous (in order, possibly several
    /// calls); `lost` a hole skipped because too much waits behind it.
    mutating func insert(_ bytes: UnsafeRawBufferPointer, at offset: UInt64,
                         deliver: (UnsafeRawBufferPointer) -> Void, lost: (UInt64) -> Void) {
        let end = offset + UInt64(bytes.count)
        guard end > delivered, !bytes.isEmpty else { return }   // a repeat of what was delivered
        if offset <= delivered {
            let skip = Int(delivered - offset)
            delivered = end
            deliver(UnsafeRawBufferPointer(rebasing: bytes[skip...]))
            drain(deliver)
            return
        }
        // Beyond a hole: kept until it is filled (ranges kept whole; overlaps are cut on delivery,
        // where the first copy wins).
        if let longest = longestAt[offset], longest >= bytes.count { return }
        longestAt[offset] = bytes.count
        pending.push(offset: offset, data: Array(bytes))
        pendingBytes += bytes.count + Self.rangeOverhead
        if pendingBytes > maxPending { skipHoles(deliver: deliver, lost: lost, untilWithin: maxPending / 2) }
    }

    /// Delivers what follows `delivered` among the kept ranges.
    private mutating func drain(_ deliver: (UnsafeRawBufferPointer) -> Void) {
        while let first = pending.minimum, first.offset <= delivered {
            _ = pending.popMinimum()
            pendingBytes -= first.data.count + Self.rangeOverhead
            if longestAt[first.offset] == first.data.count { longestAt[first.offset] = nil }
            let end = first.offset + UInt64(first.data.count)
            guard end > delivered else { continue }
            let skip = Int(delivered - first.offset)
            delivered = end
            first.data.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[skip...])) }
        }
    }

    /// Declares the holes before the kept ranges lost and delivers the ranges (the end of the
    /// stream; or, with `untilWithin`, until no more than that waits).
    mutating func skipHoles(deliver: (UnsafeRawBufferPointer) -> Void, lost: (UInt64) -> Void, untilWithin limit: Int = 0) {
        while let first = pending.minimum, pendingBytes > limit {
            if first.offset > delivered {
                let hole = first.offset - delivered
                lostBytes += hole
                lost(hole)
                delivered = first.offset
            }
            drain(deliver)
        }
    }

    /// Declares the bytes up to `end` lost (a stream's final size, when its end never came).
    mutating func lose(upTo end: UInt64, lost: (UInt64) -> Void) {
        guard end > delivered, pending.isEmpty else { return }
        lostBytes += end - delivered
        lost(end - delivered)
        delivered = end
    }
}
