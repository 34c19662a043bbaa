import Testing
@testable import IcySniffCore

/// The bounded map behind the cache model and the report: least recently used out, O(1).
@Suite struct BoundedLRUTests {
    @Test func evictsTheLeastRecentlyUsed() {
        var lru = BoundedLRU<String, Int>(capacity: 3)
        #expect(lru.set("a", 1) == nil && lru.set("b", 2) == nil && lru.set("c", 3) == nil)
        #expect(lru.value(for: "a") == 1)               // a is now the newest
        let out = lru.set("d", 4)                        // b is the oldest
        #expect(out?.key == "b" && out?.value == 2)
        #expect(lru.peek("b") == nil && lru.count == 3 && lru.evictions == 1)
        #expect(lru.peek("c") == 3)                      // peek does not change the order
        #expect(lru.set("e", 5)?.key == "c")
    }

    @Test func updateReadsAndWritesInOneLookUp() {
        var lru = BoundedLRU<String, [Int]>(capacity: 2)
        lru.update("x") { v in #expect(v == nil); v = [1] }
        lru.update("x") { v in v!.append(2) }
        #expect(lru.peek("x") == [1, 2])
        lru.update("y") { v in v = [9] }
        lru.update("x") { _ in }                         // touched: y is now the oldest
        #expect(lru.update("z") { v in v = [7] }?.key == "y")
        // Removing an entry frees its slot for the next one, without an eviction.
        lru.update("x") { v in v = nil }
        #expect(lru.count == 1 && lru.peek("x") == nil)
        #expect(lru.set("w", [3]) == nil && lru.count == 2 && lru.evictions == 1)
    }

    /// The keys come out least recently used first, whatever the dictionary's order: sets,
    /// reads, in-place updates, removals and evictions as they happened.
    @Test func keysComeOutLeastRecentlyUsedFirst() {
        var lru = BoundedLRU<Int, Int>(capacity: 64)
        var order: [Int] = []                            // the reference: oldest first
        func used(_ k: Int) { order.removeAll { $0 == k }; order.append(k) }
        for k in stride(from: 0, to: 6_400, by: 97) {   // 66 keys into 64 places: two evicted
            lru.set(k, k); used(k)
            if order.count > 64 { order.removeFirst() }
        }
        for k in [970, 3_104, 6_305] { _ = lru.value(for: k); used(k) }
        lru.update(1_940) { $0 = nil }; order.removeAll { $0 == 1_940 }
        lru.update(4_850) { $0! += 1 }; used(4_850)
        _ = lru.peek(485)                                // a peek changes nothing
        lru.modify(2_910) { $0 += 1 }                    // nor does an in-place change
        #expect(lru.keys == order)
        #expect(lru.keys.count == lru.count)
    }

    /// Many more keys than room, in a pattern: what stays is always the newest `capacity`.
    @Test func staysBoundedUnderChurn() {
        var lru = BoundedLRU<Int, Int>(capacity: 100)
        for k in 0..<10_000 { lru.set(k % 997 * 31 + k / 997, k) }
        #expect(lru.count == 100)
        #expect(lru.evictions == 10_000 - 100)
    }
}
