/// Out-of-order segments of one direction, as a binary min-heap on (offset, arrival): O(log n) to
/// add a segment and to take the lowest one, whatever order segments come in (10^5 reversed
/// segments cost 10^5 log 10^5, not 10^10). Among copies of the same bytes the first to arrive
/// comes out first, so the first copy wins.
struct OutOfOrderStore {
    private var heap: [PendingSegment] = []
    private var arrivals: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var minimum: PendingSegment? { heap.first }

    @inline(__always) private static func less(_ a: PendingSegment, _ b: PendingSegment) -> Bool {
        a.offset != b.offset ? a.offset < b.offset : a.arrival < b.arrival
    }

    mutating func push(offset: UInt64, data: [UInt8], peerAck: UInt64? = nil) {
        arrivals &+= 1
        heap.append(PendingSegment(offset: offset, data: data, arrival: arrivals, peerAck: peerAck))
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.less(heap[i], heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    mutating func popMinimum() -> PendingSegment? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count && Self.less(heap[l], heap[smallest]) { smallest = l }
            if r < heap.count && Self.less(heap[r], heap[smallest]) { smallest = r }
            if smallest == i { break }
            heap.swapAt(i, smallest)
            i = smallest
        }
        return top
    }
}
