/// A map with a fixed number of entries: when full, the least recently used one goes. Lookups,
/// insertions and evictions are O(1): a dictionary to slot indices and a doubly linked list of
/// slots kept in arrays (no node allocation after the first `capacity` insertions).
struct BoundedLRU<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        /// Optional only so that `update` can move the value out and back without copying it
        /// (a copy of an array value would be copied again on write).
        var stored: Value?
        var newer = -1
        var older = -1
        init(key: Key, value: Value) { self.key = key; self.stored = value }
        var value: Value {
            get { stored! }
            set { stored = newValue }
        }
        mutating func take() -> Value? { defer { stored = nil }; return stored }
        mutating func put(_ v: Value) { stored = v }
    }
    let capacity: Int
    private var index: [Key: Int] = [:]
    private var slots: [Slot] = []
    /// Slots of removed entries, reused first.
    private var free: [Int] = []
    private var newest = -1
    private var oldest = -1
    /// Entries pushed out because the map was full.
    private(set) var evictions: UInt64 = 0

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    var count: Int { index.count }

    /// The keys, least recently used first: an order the run's traffic decides. The
    /// dictionary's own order changes from process to process with Swift's hash seed, and a
    /// report that listed entries in it (the redirect chains whose next request never came)
    /// listed them in another order at each run.
    var keys: [Key] {
        var out: [Key] = []
        out.reserveCapacity(index.count)
        var i = oldest
        while i >= 0 {
            out.append(slots[i].key)
            i = slots[i].newer
        }
        return out
    }

    /// The value for `key`, which becomes the most recently used.
    mutating func value(for key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        touch(i)
        return slots[i].value
    }

    /// The value for `key` without changing the order.
    func peek(_ key: Key) -> Value? { index[key].map { slots[$0].value } }

    /// Sets `key`'s value (most recently used). Returns the entry evicted to make room, if any.
    @discardableResult
    mutating func set(_ key: Key, _ value: Value) -> (key: Key, value: Value)? {
        if let i = index[key] {
            slots[i].value = value
            touch(i)
            return nil
        }
        var evicted: (key: Key, value: Value)? = nil
        let i: Int
        if let reused = free.popLast() {
            i = reused
            slots[i] = Slot(key: key, value: value)
        } else if slots.count < capacity {
            i = slots.count
            slots.append(Slot(key: key, value: value))
        } else {
            i = oldest
            evicted = (slots[i].key, slots[i].value)
            evictions += 1
            unlink(i)
            index[slots[i].key] = nil
            slots[i] = Slot(key: key, value: value)
        }
        index[key] = i
        linkAsNewest(i)
        return evicted
    }

    /// Changes the value of an entry in place (no change of order); false if it is not there.
    @discardableResult
    mutating func modify(_ key: Key, _ body: (inout Value) -> Void) -> Bool {
        guard let i = index[key] else { return false }
        var value = slots[i].take()!
        body(&value)
        slots[i].put(value)
        return true
    }

    /// One look-up for a read-then-write: `body` gets the entry in place (nil when absent, and it
    /// may set it), which becomes the most recently used. Returns the entry evicted to make room.
    @discardableResult
    mutating func update(_ key: Key, _ body: (inout Value?) -> Void) -> (key: Key, value: Value)? {
        if let i = index[key] {
            touch(i)
            var value: Value? = slots[i].take()
            body(&value)
            if let value { slots[i].put(value) } else { remove(at: i, key: key) }
            return nil
        }
        var value: Value? = nil
        body(&value)
        guard let value else { return nil }
        return set(key, value)
    }

    private mutating func remove(at i: Int, key: Key) {
        unlink(i)
        index[key] = nil
        free.append(i)
    }

    private mutating func touch(_ i: Int) {
        guard i != newest else { return }
        unlink(i)
        linkAsNewest(i)
    }

    private mutating func unlink(_ i: Int) {
        let n = slots[i].newer, o = slots[i].older
        if n >= 0 { slots[n].older = o } else { newest = o }
        if o >= 0 { slots[o].newer = n } else { oldest = n }
        slots[i].newer = -1
        slots[i].older = -1
    }

    private mutating func linkAsNewest(_ i: Int) {
        slots[i].older = newest
        slots[i].newer = -1
        if newest >= 0 { slots[newest].newer = i }
        newest = i
        if oldest < 0 { oldest = i }
    }
}

/// A text key kept as its hash, for bounded tables that only look text up (URLs): an entry then
/// costs the same whatever the length of what a client sent (60,000 URLs of 2 KiB made the
/// cache model 100 MiB and the report 270 MiB). The hash is Swift's SipHash, seeded per process:
/// a collision cannot be aimed, and happens by chance about once in 10^10 runs of a full table.
struct TextKey: Hashable {
    let hash: Int
    init(_ text: String) { hash = text.hashValue }
    /// A key of bytes (the same SipHash, over the bytes as they are): equal only to keys of the
    /// same bytes made this way, never compared with a String's.
    init(bytes: UnsafeRawBufferPointer) {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        hash = hasher.finalize()
    }
}
