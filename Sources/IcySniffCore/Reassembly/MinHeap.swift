/// What a `MinHeap` orders by: `a` comes out before `b`.
protocol HeapOrdered {
    static func before(_ a: Self, _ b: Self) -> Bool
}

/// A binary min-heap: O(log n) to add an element and to take the first. The one heap of the
/// pipeline: TCP's out-of-order segments (`OutOfOrderStore`), QUIC's ranges beyond a hole
/// (`OffsetReassembler`) and QPACK's blocked sections (`QPACKDecoder`) wait in it, each ordered
/// by where it goes and then by arrival, so that among equals the first to come comes out first.
struct MinHeap<Element: HeapOrdered> {
    private var items: [Element] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var minimum: Element? { items.first }

    mutating func push(_ e: Element) {
        items.append(e)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard Element.before(items[i], items[parent]) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func popMinimum() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < items.count && Element.before(items[l], items[smallest]) { smallest = l }
            if r < items.count && Element.before(items[r], items[smallest]) { smallest = r }
            if smallest == i { break }
            items.swapAt(i, smallest)
            i = smallest
        }
        return top
    }

    mutating func removeAll() { items = [] }
}
