/// Out-of-order segments of one direction, as a binary min-heap on (offset, arrival): O(log n) to
/// add a segment and to take the lowest one, whatever order segments come in (10^5 reversed
/// segments cost 10^5 log 10^5, not 10^10). Among copies of the same bytes the first to arrive
/// comes out first, so the first copy wins.
struct OutOfOrderStore {
    private var heap = MinHeap<PendingSegment>()
    private var arrivals: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var minimum: PendingSegment? { heap.minimum }

    mutating func push(offset: UInt64, data: [UInt8], peerAck: UInt64? = nil) {
        arrivals &+= 1
        heap.push(PendingSegment(offset: offset, data: data, arrival: arrivals, peerAck: peerAck))
    }

    mutating func popMinimum() -> PendingSegment? { heap.popMinimum() }
}

extension PendingSegment: HeapOrdered {
    @inline(__always) static func before(_ a: PendingSegment, _ b: PendingSegment) -> Bool {
        a.offset != b.offset ? a.offset < b.offset : a.arrival < b.arrival
    }
}
